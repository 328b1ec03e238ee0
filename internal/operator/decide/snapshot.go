package decide

import (
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	"k8s.io/apimachinery/pkg/types"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/health"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/nodegate"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/rollout"
)

// Snapshot is everything a reconcile reads, once. The core reads it and
// changes nothing of it: Records, PlanInstall, PlanRemoval and Simulate
// each decide on a Copy, and return what they decide; carrying the plan
// out writes into neither. The fields from DriftCheck on are what the
// records note on their copy on the way (Records returns it).
type Snapshot struct {
	Shim *v1alpha1.Shim
	// hash is the rollout's target: the spec's hash and the artifact
	// pinned for it (shimspec.TargetHash); specHash the spec's alone.
	Hash     string
	SpecHash string
	// art is the artifact pinned for the rollout (nil: none, the spec is
	// refused); shown is what the status shows of it.
	Art, Shown *v1alpha1.ResolvedArtifact
	// retried is the retry request acted on (status.retried);
	// RetriedHash the target it was acted on at (status.retriedSpecHash;
	// "": not known, a status written before it was kept). The nodes a
	// request names start again at that target even while other failed
	// nodes halt the rollout.
	Retried     string
	RetriedHash string
	// Views are the views of every node of the cluster for the Shim
	// (BuildViews); the rollout's decision (Decide) fills in their plans.
	Views []NodeView
	// now is when the snapshot was read: the time of the records a
	// decision writes and of its drift checks.
	Now time.Time
	// RolloutNow is the rollout clock's reading (Options.Clock): the time
	// maintenance windows, bakes and halts are judged and recorded by.
	RolloutNow time.Time
	// fresh: the result of the view's Job (by index) was read by this
	// reconcile (results.Reader.ReadFinished); pulls are the pull failures
	// of running Jobs by node (results.Reader.ReadPulls).
	Fresh []bool
	Pulls map[string]*plan.NodeResult
	// jobs are the operator's Jobs as read (every Shim's), shims every
	// Shim (the batch offers and the startup taint count them).
	Jobs  []*batchv1.Job
	Shims []v1alpha1.Shim
	// droppable are the ControllerRevisions a new revision would drop,
	// by name (revision.Store.ReadDroppable).
	Droppable map[string]*appsv1.ControllerRevision
	// classes are the RuntimeClasses read (classes.Classes.Read); rcmUID
	// the UID of the runtime-class-manager Shim spec.migrateFrom names, read
	// when one of them is that Shim's (classes.Classes.ReadPredecessor).
	Classes *ClassSet
	RCMUID  types.UID
	// Gate is the node gate as the reconcile read it (nodegate.Gate.Read):
	// which nodes other Shims' installers hold, and their offers.
	Gate nodegate.View
	// StatusWritten is when the operator last wrote the Shim's status,
	// EventsEmitted when its gathered Events last went out (zero: not since
	// it started).
	StatusWritten, EventsEmitted time.Time
	// EventsHeld: per-node notes of earlier reconciles are held back
	// (EventsAt), to go out with this plan's or when it comes back.
	EventsHeld bool
	// ResolveAt is when the artifact is resolved again by time (zero: not
	// by time; pin.Pinner.NextAt).
	ResolveAt time.Time
	// Pods are, by node, the pods of the Shim's RuntimeClasses that run
	// there (workload.PodsOn), read when the reconcile may remove the
	// shim from a node: a node's removal waits for them (InUse).
	Pods map[string][]string
	// NodePods are the pods of each node the Shim drains
	// (rolloutStrategy.disruption Drain, the node cordoned for it), and
	// Budgets the cluster's PodDisruptionBudgets, read then; the
	// operator's namespace is where its installers run (never drained).
	NodePods          map[string][]*corev1.Pod
	Budgets           []*policyv1.PodDisruptionBudget
	OperatorNamespace string
	// refusal says why the spec is rolled out to no node (nil: it is).
	Refusal *shimspec.Refusal
	// notices are the Events about the Shim that reading the snapshot
	// found (the artifact's resolution, a revert), emitted once the
	// decision is complete.
	Notices []Notice
	// driftCheck is when a node that just finished an install and lacks a
	// handler is looked at again (zero: none); due when the running
	// installers' pulls are looked at again (StuckPulls; zero: none).
	DriftCheck time.Time
	Due        time.Time

	// windows and steps are the Shim's rollout rules (delivery.go).
	// GateRead: the health gate's workloads were read, and GateFailures
	// are their failures on the updated nodes since the rollout started,
	// which the decision judges (JudgeGate); Unjudged: the read failed.
	Windows      rollout.Windows
	Steps        rollout.Steps
	GateRead     bool
	GateFailures []health.Failure
	Unjudged     bool
	// reverted is the target whose rollout failed, while the reconcile's
	// target is the previous revision (revisions.go: revert).
	Reverted string
	// retriedNow: this reconcile acted on a new retry request, which
	// lifts a halt of the health gate.
	RetriedNow bool
}

// Copy returns the snapshot as a decision may change it without changing
// o (the core changes nothing it is given): the views, the notices and the
// marks of fresh results are the copy's own; the objects read (the Shim,
// nodes, Jobs, RuntimeClasses) are shared and never changed.
func (o *Snapshot) Copy() *Snapshot {
	c := *o
	c.Views = slices.Clone(o.Views)
	c.Fresh = slices.Clone(o.Fresh)
	c.Notices = slices.Clone(o.Notices)
	return &c
}

// target is what the rollout installs: the hash and the pinned artifact.
func (o *Snapshot) Target() shimspec.Target { return shimspec.Target{Hash: o.Hash, Art: o.Art} }

// planFor builds a node's install plan towards the rollout's target.
func (o *Snapshot) PlanFor(s shimspec.Settings) func(*corev1.Node) (*plan.NodePlan, error) {
	return func(n *corev1.Node) (*plan.NodePlan, error) {
		return shimspec.Build(o.Shim, n, plan.OpInstall, s, o.Target())
	}
}

// gateWatches: the health gate watches the target's rollout, which has
// not yet been recorded as rolled out (its last bake passed) nor halted,
// nor is it going back to a previous revision.
func (o *Snapshot) GateWatches() bool {
	if _, on := shimspec.Gate(o.Shim); !on || o.Reverted != "" || o.Refusal != nil {
		return false
	}
	if revs := o.Shim.Status.Revisions; len(revs) > 0 && revs[0].SpecHash == o.Hash {
		return false
	}
	st := shimspec.RolloutOf(o.Shim, o.Hash)
	return st == nil || st.Halt == nil || o.RetriedNow || o.RetryRequested()
}

// RetryRequested: the Shim carries a retry request not yet acted on
// (Records acts on it: RetriedNow on the snapshot it returns).
func (o *Snapshot) RetryRequested() bool {
	req := o.Shim.Annotations[v1alpha1.RetryAnnotation]
	return req != "" && req != o.Retried
}

// previousRevision is the newest revision rolled out before the target
// (nil: none).
func (o *Snapshot) PreviousRevision() *v1alpha1.Revision {
	for i := range o.Shim.Status.Revisions {
		if rev := &o.Shim.Status.Revisions[i]; rev.SpecHash != o.Hash {
			return rev
		}
	}
	return nil
}

// jobHash is the spec hash a node's Job of op is named by.
func (o *Snapshot) JobHash(v *NodeView, op string) string {
	if op == jobview.OpUninstall {
		return v.SpecHash
	}
	return o.Hash
}
