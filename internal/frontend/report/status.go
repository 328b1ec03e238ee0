package report

import (
	"cmp"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/rollout"
)

// Node states, as a row names them.
const (
	StateCurrent      = "Current"
	StateOutdated     = "Outdated"
	StateInstalling   = "Installing"
	StateUninstalling = "Uninstalling"
	StateFailed       = "Failed"
	StatePending      = "Pending"
	StateSkipped      = "Skipped"
	// StateToRemove: the node has the shim but the Shim no longer selects
	// it (or is being deleted); it is uninstalled under maxUpdate.
	StateToRemove = "ToRemove"
)

// NodeRow is one node as kubectl shimkit status shows it.
type NodeRow struct {
	Node    string `json:"node"`
	Runtime string `json:"runtime,omitempty"`
	State   string `json:"state"`
	// Revision is the spec hash the node has installed (the Shim's
	// status.specHash when Current; for an Installing node, the one its
	// Job installs); Digest the artifact pinned for it, when the status
	// still names that revision. Attempted is, for a Failed node, the
	// revision its failed operation tried, when it is not Revision (a
	// node rolled back keeps the revision it had).
	Revision  string `json:"revision,omitempty"`
	Digest    string `json:"digest,omitempty"`
	Attempted string `json:"attempted,omitempty"`
	// Since is when the node entered its state, when known: its Job's
	// start, success or failure, or the failure's record.
	Since   *metav1.Time `json:"since,omitempty"`
	Reason  string       `json:"reason,omitempty"`
	Message string       `json:"message,omitempty"`
}

// Status is a row per node the Shim concerns: selected by it, or holding
// something of it (a label, a record, a Job), in node name order.
func Status(shim *v1alpha1.Shim, views []decide.NodeView) []NodeRow {
	target := shim.Status.SpecHash
	deleting := !shim.DeletionTimestamp.IsZero()
	var rows []NodeRow
	for i := range views {
		v := &views[i]
		row, ok := nodeRow(shim, v, target, deleting)
		if !ok {
			continue
		}
		row.Node, row.Runtime = v.Node.Name, v.Node.Status.NodeInfo.ContainerRuntimeVersion
		if row.Revision != "" {
			row.Digest = digestOf(shim, row.Revision)
		}
		rows = append(rows, row)
	}
	slices.SortFunc(rows, func(a, b NodeRow) int { return strings.Compare(a.Node, b.Node) })
	return rows
}

// nodeRow is the node's state, revision, time and reason (false: the
// Shim has nothing to do with the node).
func nodeRow(shim *v1alpha1.Shim, v *decide.NodeView, target string, deleting bool) (NodeRow, bool) {
	removing := deleting || !v.Targeted()
	if v.Matching && v.Skip != nil && !v.Installed() && v.Job == nil {
		return NodeRow{State: StateSkipped, Reason: v.Skip.Reason, Message: v.Skip.Detail}, true
	}
	switch v.State(target, removing) {
	case rollout.Installing:
		return NodeRow{State: StateInstalling, Revision: jobHash(v.Job, target), Since: created(v.Job)}, true
	case rollout.Uninstalling:
		return NodeRow{State: StateUninstalling, Revision: v.SpecHash, Since: created(v.Job)}, true
	case rollout.Failed:
		return failedRow(v), true
	case rollout.Installed:
		row := NodeRow{State: StateOutdated, Revision: v.SpecHash, Since: installedAt(v)}
		switch {
		case removing:
			row.State = StateToRemove
		case v.SpecHash == target:
			row.State = StateCurrent
		}
		return row, true
	}
	if !v.Targeted() {
		return NodeRow{}, false
	}
	return NodeRow{State: StatePending}, true
}

// failedRow says why the node's last operation failed: its Job's failure
// (the installer's reason when the operator recorded it), else the
// node's failure record.
func failedRow(v *decide.NodeView) NodeRow {
	row := NodeRow{State: StateFailed, Revision: v.SpecHash}
	if f := v.Failure; f != nil {
		t := metav1.NewTime(f.Time)
		row.Reason, row.Message, row.Since = f.Reason, f.Message, &t
		row.Attempted = f.SpecHash
	}
	if j := v.Job; j != nil && j.Failed() {
		row.Attempted = cmp.Or(row.Attempted, j.SpecHash)
		if reason, msg := j.Failure(); reason != "" && row.Reason == "" {
			row.Reason, row.Message = reason, msg
		}
		if c := j.Condition(batchv1.JobFailed); c != nil && row.Since == nil {
			row.Since = &c.LastTransitionTime
		}
	}
	if row.Attempted == row.Revision {
		row.Attempted = ""
	}
	return row
}

// jobHash is the revision a Job installs (the target when it does not say).
func jobHash(j *jobview.View, target string) string {
	if j != nil && j.SpecHash != "" {
		return j.SpecHash
	}
	return target
}

func created(j *jobview.View) *metav1.Time {
	if j == nil {
		return nil
	}
	t := j.Object.CreationTimestamp
	return &t
}

// installedAt is when the node's install of its revision succeeded, when
// its Job is still there to say.
func installedAt(v *decide.NodeView) *metav1.Time {
	if j := v.Job; j != nil && j.Op == jobview.OpInstall && j.SpecHash == v.SpecHash && j.Succeeded() {
		if c := j.Condition(batchv1.JobComplete); c != nil {
			return &c.LastTransitionTime
		}
		if t := j.Object.Status.CompletionTime; t != nil {
			return t
		}
	}
	return nil
}

// digestOf is the artifact the Shim pinned for a revision: the current
// one's, or a recorded revision's.
func digestOf(shim *v1alpha1.Shim, hash string) string {
	if a := shim.Status.Artifact; hash == shim.Status.SpecHash && a != nil {
		return a.Digest
	}
	for _, r := range shim.Status.Revisions {
		if r.SpecHash == hash {
			return r.Digest
		}
	}
	return ""
}

// age is how long ago t was, as kubectl prints ages ("-": unknown).
func age(t *metav1.Time, now time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}
