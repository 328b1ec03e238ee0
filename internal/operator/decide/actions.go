package decide

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shimkit/shimkit/internal/nodelabel/record"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// An Action is one step of a decision: a write, or what the operator
// records of one once it is written (a metric, a held-back note, the retry
// request acted on). It is data: the operator's executor carries it out
// and holds no policy, in the order the decision gives, stopping at the
// first error.
type Action interface{ action() }

// Together runs its actions concurrently (a few at a time: one per node
// of a wave), after the actions before it and before the ones after.
type Together []Action

// InOrder runs its actions one after the other (one node's steps, within
// a Together).
type InOrder []Action

// DeleteJob deletes a Job (its pods in the background); one already gone
// is fine. Why says what for (an error names it).
type DeleteJob struct {
	Job       *batchv1.Job
	Node, Why string
}

// PatchJob ends a Job with a merge patch (nodejob.FailPatch).
type PatchJob struct {
	Job          *batchv1.Job
	Node, Reason string
	Patch        []byte
}

// MarkInstalled labels the node as having the Shim at SpecHash
// (nodelabel.MarkOn: its install record too).
type MarkInstalled struct {
	Node     *corev1.Node
	Shim     string
	UID      types.UID
	SpecHash string
	// Scheduling is the Shim's spec.schedulingLabel, labelled with its
	// own in the same request ("": none).
	Scheduling string
}

// Unmark removes the Shim's label and records from the node, and its
// scheduling label (spec.schedulingLabel; "": none) in the same request.
type Unmark struct{ Node, Shim, Scheduling string }

// Fence puts the Shim's fence taint on the node (FenceTaint), as read
// (a taint list changed meanwhile is read again next time): no new pod
// without a toleration for it is scheduled there, while the pods there
// run on, admitted with the node's labels as they stay, until they end
// and the node's removal starts. Unfence takes the taint off again.
type Fence struct {
	Node  *corev1.Node
	Taint corev1.Taint
}

// Unfence removes the Shim's fence taint from the node, as read.
type Unfence struct {
	Node  *corev1.Node
	Taint corev1.Taint
}

// DropRecords removes records another Shim object of the name left.
type DropRecords struct {
	Node string
	Keys []string
}

// Untaint removes the startup taint from a node, with the resourceVersion
// read: a taint list changed meanwhile is read again on the next
// reconcile, not overwritten. Said is the Event once it is removed.
type Untaint struct {
	Node *corev1.Node
	Shim *v1alpha1.Shim
	Said Notice
}

// MarkFailed records a Job's failure on the node.
type MarkFailed struct {
	Node, Shim string
	Failure    record.Failure
}

// KeepLog keeps what a failed installer Job leaves for kubectl shimkit
// logs: the Job, longer (the operator's FailedJobTTL), and a copy of its
// log's end (results.KeepLog), Reason and At saying which failure.
// What cannot be kept is said with the API server's answer
// (Notice.Answered): NotCopied, the copy of the log, NotKept, the Job.
type KeepLog struct {
	Shim               *v1alpha1.Shim
	Node, Reason       string
	Job                *batchv1.Job
	At                 time.Time
	NotCopied, NotKept Notice
}

// ClearFailure removes the Shim's failure record from the node.
type ClearFailure struct{ Node, Shim string }

// MarkVerified records a verification's finding on the node.
type MarkVerified struct {
	Node, Shim string
	Found      record.Verification
}

// Note adds a per-node Normal note, emitted with the others of its reason
// in one Event (status.NodeEvents).
type Note struct {
	Reason, Action, Detail string
}

// AddFinalizer puts the operator's finalizer (shimspec.Finalizer) on the
// Shim, before anything is on a node: a deleted Shim then waits for its
// nodes to be clean. RemoveFinalizer takes it off once they are: the
// Shim goes.
type AddFinalizer struct{ Shim *v1alpha1.Shim }

// RemoveFinalizer takes the operator's finalizer off a deleted Shim whose
// nodes are clean.
type RemoveFinalizer struct{ Shim *v1alpha1.Shim }

// CountDrift counts a node installed again because it drifted in the
// metrics, for the Shim named.
type CountDrift struct{ Shim, Node string }

// CountJob counts a finished Job in the metrics (once per Job).
type CountJob struct {
	Shim string
	Job  *jobview.View
}

// RememberRetry records the retry request acted on, the target it was
// acted on at (Hash), and the Jobs it deleted, once they are deleted.
type RememberRetry struct {
	Shim          *v1alpha1.Shim
	Request, Hash string
	Jobs          []types.UID
}

func (Together) action()        {}
func (InOrder) action()         {}
func (DeleteJob) action()       {}
func (KeepLog) action()         {}
func (PatchJob) action()        {}
func (MarkInstalled) action()   {}
func (Unmark) action()          {}
func (Fence) action()           {}
func (Unfence) action()         {}
func (DropRecords) action()     {}
func (Untaint) action()         {}
func (MarkFailed) action()      {}
func (ClearFailure) action()    {}
func (MarkVerified) action()    {}
func (Note) action()            {}
func (AddFinalizer) action()    {}
func (RemoveFinalizer) action() {}
func (CountDrift) action()      {}
func (CountJob) action()        {}
func (RememberRetry) action()   {}
