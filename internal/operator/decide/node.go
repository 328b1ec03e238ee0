package decide

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/nodelabel/record"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/rollout"
)

// LabelUninstalling is the node label value once the node's uninstall
// starts (no pod of the Shim runs there then): the RuntimeClass no longer
// selects the node, so no new pod lands there.
const LabelUninstalling = "uninstalling"

// NodeView is what a reconcile knows of one node for one Shim: read from
// the node (its labels and records) and its installer Jobs, and, once
// decided, the node's plan.
type NodeView struct {
	Node     *corev1.Node
	Matching bool
	// Skip says why a matching node cannot run the shim (nil: it can).
	Skip     *nodeview.Skip
	Label    string // the shim's label value: "", installed, uninstalling
	SpecHash string // the annotation: the hash installed
	// Failure is the failure recorded on the node (record.Failure):
	// what is left of a failed Job once it is garbage collected.
	Failure *record.Failure
	Job     *jobview.View
	// Held: a Job carrying the Shim's plan runs on the node that the cache
	// does not show yet (the node gate's hold): the node is changing.
	Held bool
	// Verify is the node's newest verifying Job (nil: none in the cache);
	// Verified the node's record of its last verification.
	Verify   *jobview.View
	Verified *record.Verification
	// Stale are the keys of records on the node that another Shim object
	// of the same name left (record.RecordsOf): dropped.
	Stale []string
	// Plan is the node's install plan, built when the node needs one;
	// PlanErr says why none could be built.
	Plan    *plan.NodePlan
	PlanErr error
	// Canary is the hash of the Shim's canary now (the operator's hash
	// of spec.canary).
	Canary string
	// Drifted says what drifted on a node labelled as having the Shim at
	// the target (a handler its kubelet no longer reports, or what its last
	// verification found): it is installed again ("": no drift).
	Drifted string
	// Fresh: the node carries the startup taint, so no workload runs
	// there yet; Forced: an admin annotated it to change outside the
	// maintenance windows. Either starts outside a window.
	Fresh, Forced bool
	// Reimaged: the node's label and records were the shim's on another
	// machine under the node's name; they go, and the node counts as
	// without the shim.
	Reimaged bool
	// Preinstalled: the node's image has the shim (spec.preinstalledOn,
	// fetchStrategy.type preinstalled): it is labelled, never installed
	// or uninstalled by a Job.
	Preinstalled bool
	// InUse are the pods the node's removal (or an install that drops a
	// handler) waits for, once decided (Snapshot.Hold): those the API
	// server shows there, else the sandboxes its installer found.
	InUse []string
	// ImageWay is how the node's installer gets the Shim's image
	// (fetchStrategy.type image): nodejob.ImageVolume or ImageCopy; ""
	// for other artifacts.
	ImageWay string
}

// Targeted: the node matches the selector and can run the shim.
func (v NodeView) Targeted() bool { return v.Matching && v.Skip == nil }

// Installed: the node has the shim at some hash (its label says so).
func (v NodeView) Installed() bool { return v.Label != "" }

// Touched: the node has the shim, or a Job is changing it.
func (v NodeView) Touched() bool { return v.Installed() || v.Job != nil && v.Job.Running() }

// State maps a node to the planner's states.
func (v NodeView) State(current string, removing bool) rollout.State {
	if v.Held {
		if removing {
			return rollout.Uninstalling
		}
		return rollout.Installing
	}
	if j := v.Job; j != nil {
		switch {
		case j.Running():
			if j.Op == jobview.OpUninstall {
				return rollout.Uninstalling
			}
			return rollout.Installing
		case j.Sibling(), j.InUse():
			// Undone with another Shim's plan, or refused while pods use
			// a handler: as before the Job.
		case j.Failed():
			reason, _ := j.Failure()
			if removing == (j.Op == jobview.OpUninstall) && (j.Op == jobview.OpUninstall || j.SpecHash == current) && !v.CanaryChanged(reason, j.Canary) {
				return rollout.Failed
			}
		}
	} else if f := v.Failure; f != nil && removing == (f.Op == jobview.OpUninstall) && (f.Op == jobview.OpUninstall || f.SpecHash == current) && !v.CanaryChanged(f.Reason, f.Canary) {
		return rollout.Failed // the Job is gone; the node's record stands
	}
	if v.Installed() {
		return rollout.Installed
	}
	return rollout.Absent
}

// CanaryChanged: the node failed its canary (reason), run with the canary
// of hash ran, and the Shim's canary has changed since (spec.canary): the
// failure says nothing about the new canary, and the node is tried again
// (not the nodes installed: the canary is not part of the spec hash).
func (v NodeView) CanaryChanged(reason, ran string) bool {
	return reason == string(plan.ReasonCanaryFailed) && ran != v.Canary
}

// NeedsInstall: the node lacks the current spec and nothing is changing
// it.
func (v NodeView) NeedsInstall(current string) bool {
	st := v.State(current, false)
	// A node whose uninstall started (LabelUninstalling) and that is
	// targeted again is installed again: a no-op there, which labels it.
	return st == rollout.Absent || st == rollout.Installed && (v.SpecHash != current || v.Drifted != "" || v.Label == LabelUninstalling)
}

func (v NodeView) PlannerNode(current string, removing bool) rollout.Node {
	if v.PlanErr != nil && !removing {
		return rollout.Node{Name: v.Node.Name, UID: string(v.Node.UID), State: rollout.Failed, SpecHash: current}
	}
	st := v.State(current, removing)
	hash := v.SpecHash
	switch {
	case (st == rollout.Failed || st == rollout.Installing) && v.Job != nil:
		hash = v.Job.SpecHash
	case st == rollout.Failed:
		hash = v.Failure.SpecHash
	case st == rollout.Installed && v.Drifted != "":
		hash = "" // not what it was installed at any more: installed again
	}
	return rollout.Node{Name: v.Node.Name, UID: string(v.Node.UID), State: st, SpecHash: hash}
}

// VerifyDue says when the node is next due for verification, and whether
// it is one to verify at all: it has the Shim at the current spec (by an
// install, not its image), has not drifted, and nothing runs on it. A
// node booted since its last verification is due at once (the zero
// time, before every other): its kubelet may report no handlers
// (containerd 1.x), and a config written anew at boot loses ours.
func (v *NodeView) VerifyDue(current string, period time.Duration) (time.Time, bool) {
	if !v.Targeted() || v.Preinstalled || v.Label != record.Installed || v.SpecHash != current || v.Drifted != "" || v.Held ||
		v.Job != nil && v.Job.Running() || v.Verify != nil && v.Verify.Running() {
		return time.Time{}, false
	}
	f := v.Verified
	if f == nil || f.SpecHash != current {
		return time.Time{}.Add(period), true
	}
	if record.Rebooted(f.Boot, v.Node) {
		return time.Time{}, true
	}
	return f.Time.Add(period), true
}

// Unverified: the node's record does not yet say what its finished
// verifying Job found, nor anything newer (an install since).
func (v *NodeView) Unverified() bool {
	j := v.Verify
	if j == nil || j.Running() {
		return false
	}
	f := v.Verified
	if f == nil {
		return true
	}
	done := j.Object.CreationTimestamp.Time
	if c := j.Object.Status.CompletionTime; c != nil {
		done = c.Time
	}
	return f.JobUID != string(j.Object.UID) && f.Time.Before(done.Truncate(time.Second))
}

// HasRecords: the node carries something of the Shim, as far as this
// reconcile knows (an uninstall recorded in it cleared its fields).
func (v *NodeView) HasRecords() bool {
	return v.Label != "" || v.SpecHash != "" || v.Failure != nil || v.Verified != nil || len(v.Stale) > 0
}

// Unrecorded: the node's labels do not yet say what its succeeded Job did.
func (v *NodeView) Unrecorded() bool {
	if v.Job.Op == jobview.OpInstall {
		return v.Label != LabelUninstalling && (v.Label != record.Installed || v.SpecHash != v.Job.SpecHash || v.Repaired())
	}
	return v.Label != ""
}

// Repaired: the node's Job reinstalled the spec after a verification found
// it drifted (created since): nodelabel.Mark records the repair, and with it a clean
// verification.
func (v *NodeView) Repaired() bool {
	f := v.Verified
	return f != nil && len(f.Drift) > 0 && f.SpecHash == v.Job.SpecHash && !v.Job.Object.CreationTimestamp.Time.Before(f.Time.Truncate(time.Second))
}

// FailedNode: the node's last operation failed, by its Job or by the
// record on the node.
func (v *NodeView) FailedNode() bool {
	if v.Job != nil {
		return v.Job.Failed() && !v.Job.Sibling() && !v.Job.InUse()
	}
	return v.Failure != nil
}
