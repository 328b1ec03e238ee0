package plan

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Outcome is how an operation ended.
type Outcome string

// Outcomes.
const (
	// Succeeded: the node has what the plan asked for.
	Succeeded Outcome = "Succeeded"
	// Failed: the operation failed before the node was changed.
	Failed Outcome = "Failed"
	// RolledBack: the operation failed after changing the node, and the
	// node was restored as it was.
	RolledBack Outcome = "RolledBack"
	// RollbackFailed: the operation failed and restoring the node failed
	// too: the node needs attention.
	RollbackFailed Outcome = "RollbackFailed"
)

// Reason says why an operation failed. The set is fixed: tooling and the
// operator match on these constants, never on messages.
type Reason string

// Failure reasons.
const (
	// ReasonInvalidPlan: the plan is malformed or of another version.
	ReasonInvalidPlan Reason = "InvalidPlan"
	// ReasonFetchFailed: the artifact could not be downloaded.
	ReasonFetchFailed Reason = "FetchFailed"
	// ReasonUnauthorized: the registry refused the credentials.
	ReasonUnauthorized Reason = "Unauthorized"
	// ReasonDigestMismatch: the artifact is not the pinned one.
	ReasonDigestMismatch Reason = "DigestMismatch"
	// ReasonArtifactInvalid: the artifact is unsafe, too large, lacks a
	// file the plan names, or has no artifact for the node's platform.
	ReasonArtifactInvalid Reason = "ArtifactInvalid"
	// ReasonConfigInvalid: the node's containerd config cannot be edited
	// safely (it does not parse, an unknown template, ...).
	ReasonConfigInvalid Reason = "ConfigInvalid"
	// ReasonConfigNotEditable: the node's containerd config is valid but
	// shimkit will not edit it: a k3s/RKE2 template that replaces the
	// distribution's config instead of extending {{ template "base" . }},
	// or that uses template actions inside TOML lines. The admin owns such
	// a template; the handler goes there by hand, or the template extends
	// the base.
	ReasonConfigNotEditable Reason = "ConfigNotEditable"
	// ReasonConflict: a handler, file, unit or plugin of that name exists
	// and shimkit did not write it.
	ReasonConflict Reason = "Conflict"
	// ReasonReserved: the plan asks for a name that belongs to containerd
	// itself or to the node (its runc shim, its default runtime).
	ReasonReserved Reason = "Reserved"
	// ReasonConcurrentEdit: another writer changed a file after shimkit
	// did, so shimkit's change could not be undone without losing that
	// edit; the file was left as it is.
	ReasonConcurrentEdit Reason = "ConcurrentEdit"
	// ReasonUnitFailed: a sandboxer daemon's unit did not start.
	ReasonUnitFailed Reason = "UnitFailed"
	// ReasonRestartFailed: containerd did not restart, or did not come back
	// healthy with the handlers in time.
	ReasonRestartFailed Reason = "RestartFailed"
	// ReasonNodeError: reading or writing the node's files failed.
	ReasonNodeError Reason = "NodeError"
	// ReasonInterrupted: the operation was cancelled (SIGTERM, deadline).
	ReasonInterrupted Reason = "Interrupted"
	// ReasonSignatureMissing: the plan asks for verification and the
	// pinned artifact has no signature. Nothing was downloaded or written.
	ReasonSignatureMissing Reason = "SignatureMissing"
	// ReasonSignatureInvalid: the artifact's signatures do not verify with
	// the plan's keys or identity. Nothing was downloaded or written.
	ReasonSignatureInvalid Reason = "SignatureInvalid"
	// ReasonInsecureTransport: the artifact would travel over plain HTTP
	// (a redirect from https to http, plain HTTP to a registry that is
	// neither loopback nor cluster-local without Artifact.Insecure).
	ReasonInsecureTransport Reason = "InsecureTransport"
	// ReasonCanaryFailed: the canary pod did not run to a zero exit with
	// the new handler in time; the install was rolled back.
	ReasonCanaryFailed Reason = "CanaryFailed"
	// ReasonSiblingFailed: another Shim's plan of the same operation (a
	// NodePlanList) failed, and this one was undone with it. It says
	// nothing against this Shim: the operator does not halt its rollout
	// and installs it on the node again, alone.
	ReasonSiblingFailed Reason = "SiblingFailed"
	// ReasonReadOnlyHost: a directory the install writes (containerd's
	// config directory, the bundle root, the link, state or unit
	// directory) is on a read-only filesystem, or the bundle root on one
	// mounted noexec; the message names it.
	// Nothing changed. The operator counts the node as skipped, not
	// failed.
	ReasonReadOnlyHost Reason = "ReadOnlyHost"
	// ReasonImagePullFailed: the kubelet could not pull an image the
	// installer's pod needs (a Shim's image, not found or unreachable;
	// ReasonUnauthorized when the registry refused the node's
	// credentials): the installer never ran, the node is unchanged. The
	// operator reports it from the pod's status.
	ReasonImagePullFailed Reason = "ImagePullFailed"
	// ReasonRestartStopsPods: restarting the node's runtime to load the
	// handler would stop every pod of the node (CRI-O with cgroup_manager
	// cgroupfs on a cgroup v1 host, where each conmon stays in
	// crio.service's cgroup); the message names the file that sets it.
	// Nothing changed.
	ReasonRestartStopsPods Reason = "RestartStopsPods"
	// ReasonHandlerInUse: pod sandboxes on the node use a handler the
	// operation would remove (an uninstall, or a spec that drops or
	// renames a handler), as the runtime itself lists them (CRI
	// ListPodSandbox, the ready ones); NodeResult.InUse names them. Nothing changed: the handler, its binary and its bundle stay
	// until the last of them is gone.
	ReasonHandlerInUse Reason = "HandlerInUse"
	// ReasonShimStuck: a shim process of another pod on the node is
	// stopped (SIGSTOP, a debugger) or stuck in the kernel, and the
	// operation needed containerd restarted: at its start containerd
	// deletes the task of a shim that does not answer in 5 s (its pod's
	// containers end) or waits for ever on one that answers in part.
	// NodeResult.Hang names the processes and their pods. Nothing was
	// restarted and the node's files are as they were; the same plan
	// succeeds once the shim answers again.
	ReasonShimStuck Reason = "ShimStuck"
)

// Permanent reports whether retrying the same plan on the same node cannot
// change the answer: the refusal follows from the plan, the artifact, or
// what someone else wrote on the node (a handler of the name, a config
// shimkit cannot edit safely), not from a passing condition. The installer
// exits with its own code on such a failure before changing the node, so
// that the operator's Job ends at once rather than retrying; the node is
// tried again on a new spec or an admin's retry. Download and restart
// failures, a concurrent edit, an interruption are not permanent.
func (r Reason) Permanent() bool {
	switch r {
	case ReasonInvalidPlan, ReasonUnauthorized, ReasonDigestMismatch, ReasonArtifactInvalid, ReasonConfigInvalid,
		ReasonConfigNotEditable, ReasonConflict, ReasonReserved, ReasonReadOnlyHost, ReasonSignatureMissing, ReasonSignatureInvalid, ReasonInsecureTransport,
		ReasonRestartStopsPods:
		return true
	}
	return false
}

// Exit codes of the installer: what a Job's status (and a script) can
// tell apart without reading the NodeResult.
const (
	ExitOK             = 0 // installed, uninstalled, verified (drift or not), or nothing to do
	ExitFailed         = 1 // failed before the node was changed; worth a retry
	ExitUsage          = 2 // bad flags or plan
	ExitRolledBack     = 3 // failed; the node was restored
	ExitRollbackFailed = 4 // failed, and restoring the node failed too
	// ExitRefused: failed before the node was changed, for a reason that
	// retrying cannot change (Reason.Permanent: Conflict, Reserved,
	// DigestMismatch, Unauthorized, ...).
	ExitRefused = 5
	// ExitInUse: failed before the node was changed, because pod
	// sandboxes use a handler the operation would remove
	// (ReasonHandlerInUse); the same plan succeeds once they are gone,
	// which the operator waits for rather than the Job's retries.
	ExitInUse = 6
)

// FinalExitCodes are the exit codes a retry of the same plan cannot
// change: a Job ends on them at once (its podFailurePolicy), where
// ExitFailed (a download or a restart that may pass next time) keeps the
// Job's retries.
func FinalExitCodes() []int32 {
	return []int32{ExitUsage, ExitRolledBack, ExitRollbackFailed, ExitRefused, ExitInUse}
}

// NodeResult is what the installer reports about one operation.
type NodeResult struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Shim       ShimRef   `json:"shim"`
	Node       string    `json:"node,omitempty"`
	Operation  Operation `json:"operation"`
	SpecHash   string    `json:"specHash,omitempty"`
	Outcome    Outcome   `json:"outcome"`
	// Reason and Message say why the operation failed.
	Reason  Reason `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Digest is the artifact installed ("sha256:<hex>").
	Digest string `json:"digest,omitempty"`
	// VerifiedBy names what verified the artifact's signature.
	VerifiedBy string `json:"verifiedBy,omitempty"`
	// Files are the node paths of the files placed.
	Files []string `json:"files,omitempty"`
	// Drift lists, one human-readable entry each, how the node differs
	// from what the Shim's last install recorded: a verify's findings
	// ("file /opt/shimkit/spin/<version>/containerd-shim-spin-v2 was
	// changed (sha256:… recorded, sha256:… found)", "handler spin is not
	// in containerd's config", "not installed", ...), or what an install
	// of the same spec found and repaired. Empty: the node is as recorded.
	Drift []string `json:"drift,omitempty"`
	// Runtime is the node's container runtime the operation changed
	// (RuntimeContainerd, RuntimeCRIO).
	Runtime string `json:"runtime,omitempty"`
	// Changed: the runtime's config changed; Restarted: the runtime was
	// restarted, through RestartedUnit when it is a systemd unit
	// (containerd.service, k3s.service, rke2-agent.service, crio.service).
	Changed         bool     `json:"changed,omitempty"`
	Restarted       bool     `json:"restarted,omitempty"`
	RestartedUnit   string   `json:"restartedUnit,omitempty"`
	RestartDuration Duration `json:"restartDuration,omitzero"`
	// InUse are the pod sandboxes that use a handler the operation would
	// have removed (ReasonHandlerInUse); InUseCount how many there were,
	// when EncodeResult had to leave some out.
	InUse      []Sandbox `json:"inUse,omitempty"`
	InUseCount int       `json:"inUseCount,omitempty"`
	// Hang is what the node showed when its runtime did not come back
	// from a restart (ReasonRestartFailed): the unit's state and the shim
	// processes that cannot answer. Absent when nothing looked stuck.
	Hang *Hang `json:"hang,omitempty"`
	// CanaryDuration is how long the plan's canary pod took to pass (absent
	// when none ran).
	CanaryDuration Duration `json:"canaryDuration,omitzero"`
	Duration       Duration `json:"duration,omitzero"`
}

// Sandbox is a pod sandbox the node's runtime runs, as CRI lists it.
type Sandbox struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid,omitempty"`
	// Handler is the runtime handler the sandbox runs with.
	Handler string `json:"handler"`
	// Ready: the sandbox runs; else it is stopped and not yet removed (its
	// pod is being torn down, or the kubelet keeps it for a pod that
	// ended).
	Ready bool `json:"ready,omitempty"`
	// Created is when the runtime created the sandbox: a sandbox created
	// before a Shim's bundle was switched to a new version may run the
	// old version's files.
	Created time.Time `json:"created,omitzero"`
}

// String is "<namespace>/<name>", and " (stopped)" when it is not ready.
func (s Sandbox) String() string {
	if s.Ready {
		return s.Namespace + "/" + s.Name
	}
	return s.Namespace + "/" + s.Name + " (stopped)"
}

// Hang is what a node showed when its runtime did not come back from a
// restart: the runtime's unit as systemd saw it, and the shim processes
// that cannot answer the runtime (containerd 2.2 waits at start-up for
// every shim it had, and one that is stopped keeps it from starting).
type Hang struct {
	// Unit is the runtime's systemd unit; ActiveState and SubState are
	// its states ("activating", "start": still starting).
	Unit        string `json:"unit,omitempty"`
	ActiveState string `json:"activeState,omitempty"`
	SubState    string `json:"subState,omitempty"`
	// Shims are the shim processes stopped (SIGSTOP, a debugger) or in an
	// uninterruptible sleep; ShimCount how many there were, when
	// EncodeResult had to leave some out.
	Shims     []StuckShim `json:"shims,omitempty"`
	ShimCount int         `json:"shimCount,omitempty"`
}

// StuckShim is a shim process that cannot answer its runtime.
type StuckShim struct {
	// PID is the process id on the node.
	PID int `json:"pid"`
	// Command is the process's name (containerd-shim-runc-v2, conmon).
	Command string `json:"command"`
	// State is the kernel's ("T (stopped)", "t (tracing stop)", "D (disk
	// sleep)").
	State string `json:"state"`
	// ID is the task (the pod's sandbox) the shim serves; Pod the pod, as
	// "<namespace>/<name>", when the runtime's bundle names it.
	ID  string `json:"id,omitempty"`
	Pod string `json:"pod,omitempty"`
}

// String names the process and what it serves:
// "pid 4242 containerd-shim-runc-v2 (T (stopped), pod default/web-1)".
func (s StuckShim) String() string {
	what := s.State
	switch {
	case s.Pod != "":
		what += ", pod " + s.Pod
	case s.ID != "":
		what += ", task " + s.ID
	}
	return fmt.Sprintf("pid %d %s (%s)", s.PID, s.Command, what)
}

// String says it in one line: "containerd.service activating (start);
// shim processes that cannot answer: pid ... (...)".
func (h Hang) String() string {
	var b strings.Builder
	if h.Unit != "" {
		fmt.Fprintf(&b, "%s %s (%s)", h.Unit, h.ActiveState, h.SubState)
	}
	if len(h.Shims) > 0 {
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		b.WriteString("shim processes that cannot answer: ")
		for k, s := range h.Shims {
			if k > 0 {
				b.WriteString(", ")
			}
			b.WriteString(s.String())
		}
	}
	return b.String()
}

// NewResult returns a result for the plan, not yet with an outcome.
func NewResult(p *NodePlan) *NodeResult {
	return &NodeResult{APIVersion: APIVersion, Kind: KindNodeResult, Shim: p.Shim, Node: p.Node, Operation: p.Operation, SpecHash: p.SpecHash}
}

// MaxTerminationMessage is the kubelet's limit for a container's
// termination message.
const MaxTerminationMessage = 4096

// EncodeResult writes the result as compact JSON of at most max bytes,
// shortening the file list, then the sandboxes in use (InUseCount keeps
// their number), then the stuck shims (Hang.ShimCount keeps theirs), then the drift (its first entries kept, and one saying
// how many more there were), then the message when needed;
// never the outcome, reason or digest.
func EncodeResult(r *NodeResult, maxBytes int) ([]byte, error) {
	c := *r
	drift := newDriftCut(r.Drift)
	for {
		data, err := json.Marshal(&c)
		if err != nil {
			return nil, err
		}
		if len(data) <= maxBytes {
			return data, nil
		}
		switch over := len(data) - maxBytes; {
		case len(c.Files) > 0:
			c.Files = c.Files[:len(c.Files)/2]
		case len(c.InUse) > 1:
			c.InUseCount = max(c.InUseCount, len(r.InUse))
			c.InUse = c.InUse[:len(c.InUse)/2]
		case c.Hang != nil && len(c.Hang.Shims) > 1:
			h := *c.Hang
			h.ShimCount = max(h.ShimCount, len(r.Hang.Shims))
			h.Shims = h.Shims[:len(h.Shims)/2]
			c.Hang = &h
		case drift.keep > 0:
			c.Drift = drift.halve()
		case len(c.Message) > 0:
			c.Message = shorten(c.Message, len(c.Message)-over-8)
		default:
			return nil, fmt.Errorf("result of %s does not fit %d bytes", r.Shim.Name, maxBytes)
		}
	}
}

// driftCut shortens a result's drift: the first keep entries of all, and
// one more saying how many were left out.
type driftCut struct {
	all  []string
	keep int
}

func newDriftCut(all []string) *driftCut { return &driftCut{all: all, keep: len(all)} }

// halve keeps half the entries kept so far and returns the shortened drift.
func (d *driftCut) halve() []string {
	d.keep /= 2
	out := append([]string(nil), d.all[:d.keep]...)
	return append(out, fmt.Sprintf("… and %d more", len(d.all)-d.keep))
}

// shorten cuts s to at most n bytes on a rune boundary, marking the cut.
func shorten(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	n -= len("…")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	if n <= 0 {
		return ""
	}
	return s[:n] + "…"
}

// DecodeResult reads a NodeResult, refusing another apiVersion or kind.
func DecodeResult(data []byte) (*NodeResult, error) {
	r := &NodeResult{}
	if err := json.Unmarshal(data, r); err != nil {
		return nil, fmt.Errorf("%w: result: %w", ErrInvalid, err)
	}
	if err := r.check(); err != nil {
		return nil, err
	}
	return r, nil
}

// check refuses a result of another apiVersion or kind, or of an unknown
// outcome.
func (r *NodeResult) check() error {
	if r.APIVersion != APIVersion || r.Kind != KindNodeResult {
		return fmt.Errorf("%w: %q %q: want apiVersion %s, kind %s", ErrVersion, r.APIVersion, r.Kind, APIVersion, KindNodeResult)
	}
	switch r.Outcome {
	case Succeeded, Failed, RolledBack, RollbackFailed:
		return nil
	}
	return fmt.Errorf("%w: result outcome %q", ErrInvalid, r.Outcome)
}
