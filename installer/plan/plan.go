package plan

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The document's apiVersion and kinds.
const (
	Group          = "installer.shimkit.dev"
	Version        = "v1alpha1"
	APIVersion     = Group + "/" + Version
	KindNodePlan   = "NodePlan"
	KindNodeResult = "NodeResult"
)

// BundleDirPlaceholder stands for the absolute node path of the Shim's
// current bundle directory in handler runtime paths and options, sandboxer
// commands and files marked Substitute: "$(BUNDLE_DIR)/runsc" becomes, for
// example, "/opt/shimkit/gvisor/current/runsc".
const BundleDirPlaceholder = "$(BUNDLE_DIR)"

// Operation is what a plan does on the node.
type Operation string

// Operations.
const (
	OpInstall   Operation = "install"
	OpUninstall Operation = "uninstall"
	// OpVerify changes nothing: the installer compares what the node has
	// with what the Shim's last install recorded and with the plan (the
	// install plan of the Shim's current spec, under this operation), and
	// reports each mismatch in NodeResult.Drift.
	OpVerify Operation = "verify"
)

// NodePlan says what to install on one node, remove from it, or check
// that it still has (OpVerify).
type NodePlan struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Shim identifies the owner of everything the plan installs. Name is
	// also the name of the bundle directory; UID tells a recreated Shim of
	// the same name apart.
	Shim ShimRef `json:"shim"`
	// Node is the node the plan was built for (informational).
	Node string `json:"node,omitempty"`
	// Runtime is the node's container runtime the handlers go to:
	// RuntimeContainerd or RuntimeCRIO. Empty: the installer detects it on
	// the node (a containerd distribution's layout, else CRI-O's socket,
	// config file or drop-in directory, else containerd).
	Runtime   string    `json:"runtime,omitempty"`
	Operation Operation `json:"operation"`
	// SpecHash identifies the Shim spec the plan was built from: the same
	// hash installed means nothing to do.
	SpecHash string `json:"specHash"`
	// Artifact is where the bundle comes from (install and verify; a
	// verify never fetches it, it compares the pinned Digest).
	Artifact *Artifact `json:"artifact,omitempty"`
	// Files are taken from the artifact into the bundle directory.
	Files []File `json:"files,omitempty"`
	// Handlers are the runtime handlers the Shim registers (install: at
	// least one).
	Handlers []Handler `json:"handlers,omitempty"`
	// Sandboxers are long-running sandboxer daemons the Shim runs.
	Sandboxers []Sandboxer `json:"sandboxers,omitempty"`
	// Restart says how to restart containerd and how long to wait for it.
	Restart Restart `json:"restart,omitzero"`
	// Migrate, on an install, takes the node over from another installer
	// that registered one of the plan's handlers: what that installer left
	// (its handler table, binary and bookkeeping) is replaced by the
	// Shim's, with one containerd restart. Only a handler that installer
	// recognisably wrote is taken over; anything else is a Conflict.
	Migrate *Migration `json:"migrate,omitempty"`
	// Canary, on an install, runs a short pod with one of the plan's
	// handlers once containerd has the change, before the operation
	// commits: when it does not exit 0 in time, the install is rolled back
	// (ReasonCanaryFailed). Nil: no canary.
	Canary *Canary `json:"canary,omitempty"`
}

// Container runtimes a plan may name (NodePlan.Runtime).
const (
	RuntimeContainerd = "containerd"
	// RuntimeCRIO is CRI-O: handlers go to a drop-in of shimkit's own in
	// /etc/crio/crio.conf.d, and crio.service is restarted (never
	// reloaded).
	RuntimeCRIO = "cri-o"
)

// Canary is a pod the installer has kubelet run on its node, with a
// RuntimeClass of the handler, before the install commits.
type Canary struct {
	// Handler is the runtime handler the pod runs with; one of the plan's.
	Handler string `json:"handler"`
	// RuntimeClass names a RuntimeClass of Handler without scheduling
	// constraints (the node is not labelled for the Shim yet).
	RuntimeClass string `json:"runtimeClass"`
	// Namespace is where the pod is created.
	Namespace string `json:"namespace"`
	// Image is the container's image; pulled when the node lacks it.
	Image string `json:"image"`
	// Command replaces the image's entrypoint; Args its arguments.
	Command []string `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
	// Timeout bounds the canary, from the pull to the container's exit.
	Timeout Duration `json:"timeout"`
}

// Installers a node can be migrated from.
const (
	// FromRuntimeClassManager is spinframework's runtime-class-manager (and
	// its KWasm era): a binary in /opt/rcm/bin (/opt/kwasm/bin), a lock
	// file next to it, and a handler table appended to containerd's config
	// whose runtime_type is that binary's absolute path.
	FromRuntimeClassManager = "runtime-class-manager"
)

// Migration names the installer a node is taken over from and the handler
// it registered.
type Migration struct {
	From    string `json:"from"`
	Handler string `json:"handler"`
}

// ShimRef names the Shim a plan belongs to.
type ShimRef struct {
	Name string `json:"name"`
	UID  string `json:"uid,omitempty"`
}

// SourceType is where an artifact comes from.
type SourceType string

// Artifact sources.
const (
	SourceHTTP SourceType = "http"
	SourceOCI  SourceType = "oci"
	SourceFile SourceType = "file"
	// SourceImage is a container image whose files the kubelet pulled and
	// put at Path in the installer's pod: mounted as an image volume, or
	// copied there by init containers where the node cannot mount one.
	// The installer reads the tree; it downloads nothing. Reference
	// names the image pinned to Digest, the one the kubelet pulled; its
	// signature was verified where the digest was pinned (the operator),
	// so the plan carries no Verification.
	SourceImage SourceType = "image"
)

// Artifact is the pinned source of a bundle, already chosen for the node's
// platform.
type Artifact struct {
	Type SourceType `json:"type"`
	// URL of an http artifact.
	URL string `json:"url,omitempty"`
	// Reference of an oci artifact: registry/repository:tag or @sha256:...;
	// of an image artifact, the image@sha256:... the kubelet pulled.
	Reference string `json:"reference,omitempty"`
	// Path of a file artifact on the node (a file or an OCI layout); of
	// an image artifact, where its files are in the installer's
	// filesystem.
	Path string `json:"path,omitempty"`
	// Digest pins the artifact ("sha256:<hex>"): for http and file the
	// download, for oci the manifest. Empty: not pinned.
	Digest string `json:"digest,omitempty"`
	// PlainHTTP talks plain HTTP to the registry: allowed for loopback and
	// cluster-local registries, and for others only with Insecure.
	PlainHTTP bool `json:"plainHTTP,omitempty"`
	// Insecure allows PlainHTTP to any registry.
	Insecure bool `json:"insecure,omitempty"`
	// Verification, when set, says who must have signed the artifact. The
	// installer verifies the pinned Digest's signature before it
	// downloads or writes anything, and refuses the plan otherwise
	// (ReasonSignatureMissing, ReasonSignatureInvalid). It needs Digest.
	Verification *Verification `json:"verification,omitempty"`
	// SignatureURL is where an http artifact's signature is: a sigstore
	// bundle or a detached signature (base64 or raw). Required for an
	// http artifact with Verification.
	SignatureURL string `json:"signatureURL,omitempty"`
	// PullSecretPath is the path, in the installer's filesystem, of a
	// .dockerconfigjson with the registry's credentials.
	PullSecretPath string `json:"pullSecretPath,omitempty"`
	// Platform the artifact was chosen for, os/arch.
	Platform string `json:"platform,omitempty"`
}

// Verification says who must have signed an artifact: a signature by one
// of PublicKeys, or (Keyless) a certificate of the given identity that
// chains to the trusted root at TrustedRootPath. At least one of the two.
type Verification struct {
	// PublicKeys are PEM public keys.
	PublicKeys []string `json:"publicKeys,omitempty"`
	Keyless    *Keyless `json:"keyless,omitempty"`
}

// Keyless names a signer's certificate identity.
type Keyless struct {
	Issuer string `json:"issuer"`
	// Subject or SubjectRegExp (one of them) matches the identity.
	Subject       string `json:"subject,omitempty"`
	SubjectRegExp string `json:"subjectRegExp,omitempty"`
	// TrustedRootPath is the path, in the installer's filesystem, of a
	// sigstore trusted_root.json (the operator mounts the ConfigMap that
	// spec.verification.keyless.trustedRootRef names there).
	TrustedRootPath string `json:"trustedRootPath"`
}

// File is one file of the bundle, a directory of the artifact, or a file
// the plan writes itself (Content).
type File struct {
	// Source is the file's slash-separated path in the artifact, or a
	// pattern (path.Match) that must match exactly one file; a pattern
	// without a slash matches base names anywhere in the artifact. When it
	// matches several files, the one whose base name equals Path's wins.
	// A Source ending in / is a directory of the artifact: every file
	// under it, at any depth, goes under Path (ending in / too) with Mode.
	// Empty when Content is set.
	Source string `json:"source,omitempty"`
	// Path is where the file goes, relative to the bundle directory.
	Path string `json:"path"`
	// Mode is the file's permission bits, such as 0o755.
	Mode uint32 `json:"mode"`
	// Substitute replaces BundleDirPlaceholder in the file's content.
	Substitute bool `json:"substitute,omitempty"`
	// Content, when set, is the file's content: nothing is taken from the
	// artifact for it.
	Content *string `json:"content,omitempty"`
}

// IsDir reports whether the file is a directory of the artifact.
func (f File) IsDir() bool {
	return strings.HasSuffix(f.Source, "/")
}

// Handler is one runtime handler: everything containerd's handler table
// takes. String values may hold BundleDirPlaceholder.
type Handler struct {
	Name                         string         `json:"name"`
	RuntimeType                  string         `json:"runtimeType"`
	RuntimePath                  string         `json:"runtimePath,omitempty"`
	Options                      map[string]any `json:"options,omitempty"`
	PodAnnotations               []string       `json:"podAnnotations,omitempty"`
	ContainerAnnotations         []string       `json:"containerAnnotations,omitempty"`
	PrivilegedWithoutHostDevices bool           `json:"privilegedWithoutHostDevices,omitempty"`
	Snapshotter                  string         `json:"snapshotter,omitempty"`
	// Sandboxer names the sandbox controller of the handler's pods: a
	// Sandboxer of this plan (its proxy plugin), or containerd's own
	// ("podsandbox", "shim").
	Sandboxer string `json:"sandboxer,omitempty"`
	// IOType is the handler's io_type ("fifo", "streaming").
	IOType string `json:"ioType,omitempty"`
	// Settings are further keys of the handler's table.
	Settings map[string]any `json:"settings,omitempty"`
	// Adopt lets the install take over a handler of this name that the
	// node's config already defines and shimkit did not write (an admin's,
	// or another installer's). Without it such a handler is a Conflict.
	// An adopted handler's original text is kept, and uninstall puts it
	// back byte for byte instead of deleting it.
	Adopt bool `json:"adopt,omitempty"`
}

// Sandboxer is a sandboxer daemon: a systemd unit on the node, registered in
// containerd as a proxy plugin of type "sandbox" named Name.
type Sandboxer struct {
	Name string `json:"name"`
	// Unit is the systemd unit's name (ends in .service).
	Unit string `json:"unit"`
	// Command is the daemon's argv; its first element is an absolute path,
	// usually under BundleDirPlaceholder.
	Command []string `json:"command"`
	// Environment holds NAME=value pairs for the daemon.
	Environment []string `json:"environment,omitempty"`
	// Address is the absolute path of the daemon's unix socket.
	Address string `json:"address"`
}

// Restart says how the node's containerd is restarted and checked.
type Restart struct {
	// Preset names the node's distribution layout (containerd, k3s, rke2,
	// microk8s, k0s); empty: detected on the node.
	Preset string `json:"preset,omitempty"`
	// ConfigMode is auto, file or drop-in; empty means auto.
	ConfigMode string `json:"configMode,omitempty"`
	// Timeout is how long the runtime (containerd or CRI-O) may take to
	// come back healthy.
	Timeout Duration `json:"timeout,omitzero"`
}

// Duration is a time.Duration written as a Go duration string ("30s").
type Duration time.Duration

// String is the duration as time.Duration prints it ("3.5s").
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	*d = Duration(v)
	return nil
}

// New returns an empty plan of this package's apiVersion and kind.
func New(shim ShimRef, op Operation) *NodePlan {
	return &NodePlan{APIVersion: APIVersion, Kind: KindNodePlan, Shim: shim, Operation: op}
}

// ResolveBundleDir replaces BundleDirPlaceholder in s with dir.
func ResolveBundleDir(s, dir string) string {
	return strings.ReplaceAll(s, BundleDirPlaceholder, dir)
}

// FormatMode writes file permission bits the way people read them.
func FormatMode(m uint32) string { return "0" + strconv.FormatUint(uint64(m), 8) }
