package decide

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/rollout"
)

// StatusEvery is how often a rollout's status is written when only its
// counts changed; a condition that changes is written at once.
const StatusEvery = time.Second

// MaxRevisions is how many revisions a Shim keeps (status.revisions and
// their ControllerRevisions): the rollout records one when it is complete.
const MaxRevisions = 5

// StatusPlan is the Shim's status as the plan leaves it, and how it is
// written.
type StatusPlan struct {
	// Status is the whole status; Ready: every targeted node has the
	// current spec and every RuntimeClass is published.
	Status v1alpha1.ShimStatus
	Ready  bool
	// Write: it differs from the Shim's and is written now. A rollout's
	// status whose counts alone changed is written at most every
	// StatusEvery: Write is false and Due is when it is.
	Write bool
	Due   time.Time
	// Settled: nothing of the rollout is left to do or wait for (the
	// held-back Events go out now).
	Settled bool
	// Revision is the target recorded as rolled out, first in
	// Status.Revisions (nil: nothing new): its ControllerRevision
	// (RevisionName) is created before the status is written, and Drop
	// are those of the revisions past MaxRevisions, deleted.
	Revision *v1alpha1.Revision
	Drop     []string
}

// RevisionName is the name of the ControllerRevision of the Shim's target.
func RevisionName(shim *v1alpha1.Shim, target string) string {
	return jobview.Shorten("shim-"+shim.Name, 52) + "-" + target[:min(len(target), 10)]
}

// statusIn is what a plan's decision leaves for the status: the install
// and removal rollouts, the RuntimeClasses, the Jobs it starts, where the
// progressive delivery stands and what the status records of it (nil: as
// it was), and whether the rollout is settled.
type statusIn struct {
	install, removal rollout.Plan
	classes          ClassPlan
	starts           []Start
	delivered        Delivered
	rollout          *v1alpha1.RolloutStatus
	settled          bool
}

// statusOf is the status the plan leaves: the counts with the Jobs the
// plan starts as in progress, the rollout and revisions recorded, the
// failing nodes and the conditions, judged at the snapshot's time.
func statusOf(obs *Snapshot, in statusIn) StatusPlan {
	shim := obs.Shim
	st := Counts(obs)
	st.InProgressNodes += int32(startedNow(in.starts))
	st.Artifact, st.Retried, st.RetriedSpecHash = obs.Shown, obs.Retried, obs.RetriedHash
	u := Rollup{Shim: shim, Nodes: obs.Views, Counts: st, Install: in.install, Removal: in.removal,
		Classes: ClassStatus{Published: in.classes.Published, Conflicts: in.classes.Conflicts}}
	if ref := obs.Refusal; ref != nil {
		u.Refusal = &Refusal{Reason: ref.Reason, Message: ref.Message}
	}
	u.Delivered, u.Reverted, u.Draining = in.delivered, obs.Reverted, DrainNote(obs)
	st.Rollout, st.Revisions = shim.Status.Rollout, shim.Status.Revisions
	if in.rollout != nil {
		st.Rollout = in.rollout
	}
	if st.Rollout != nil && obs.Reverted != "" {
		u.Cause = HaltTrip(st.Rollout.Halt)
	}
	sp := StatusPlan{Ready: u.Ready(), Settled: in.settled}
	if sp.Ready && obs.Reverted == "" {
		st.Revisions, sp.Revision, sp.Drop = recordRevision(obs)
	}
	failing := FailedNodes(obs, in.install, in.removal)
	st.FailedNodes = int32(len(failing))
	st.FailingNodes = failing[:min(len(failing), 10)]
	// A copy: SetStatusCondition changes conditions in place, and the
	// Shim's own must stay as read, to compare with.
	conditions := slices.Clone(shim.Status.Conditions)
	for _, c := range Conditions(u, st.FailingNodes) {
		c.LastTransitionTime = metav1.NewTime(obs.Now)
		meta.SetStatusCondition(&conditions, c)
	}
	st.Conditions = conditions
	sp.Status = st
	sp.Write = !equalStatus(shim.Status, st)
	// Only counts changed, during a rollout: at most one write a second.
	if next := obs.StatusWritten.Add(StatusEvery); sp.Write && !in.settled && equalConditions(shim.Status.Conditions, st.Conditions) && obs.Now.Before(next) {
		sp.Write, sp.Due = false, next
	}
	return sp
}

// startedNow counts the plan's starts of nodes not already changing: a
// verification changes nothing.
func startedNow(starts []Start) int {
	n := 0
	for _, st := range starts {
		v := st.View
		if st.Op != jobview.OpVerify && !v.Held && (v.Job == nil || !v.Job.Running()) {
			n++
		}
	}
	return n
}

// recordRevision records the target as rolled out to every node, first
// of the revisions, unless it is first already; the oldest beyond
// MaxRevisions are dropped.
func recordRevision(obs *Snapshot) (kept []v1alpha1.Revision, rev *v1alpha1.Revision, drop []string) {
	revs := obs.Shim.Status.Revisions
	if len(revs) > 0 && revs[0].SpecHash == obs.Hash {
		return revs, nil, nil
	}
	rev = &v1alpha1.Revision{SpecHash: obs.Hash, Time: metav1.NewTime(obs.RolloutNow.Truncate(time.Second)), ControllerRevision: RevisionName(obs.Shim, obs.Hash)}
	if obs.Art != nil {
		rev.Digest = obs.Art.Digest
	}
	kept = []v1alpha1.Revision{*rev}
	for _, old := range revs {
		switch {
		case old.SpecHash == obs.Hash:
		case len(kept) < MaxRevisions:
			kept = append(kept, old)
		default:
			drop = append(drop, old.ControllerRevision)
		}
	}
	return kept, rev, drop
}

// equalConditions: the same conditions with the same statuses, reasons
// and generations (their messages carry the counts).
func equalConditions(a, b []metav1.Condition) bool {
	return slices.EqualFunc(a, b, func(x, y metav1.Condition) bool {
		return x.Type == y.Type && x.Status == y.Status && x.Reason == y.Reason && x.ObservedGeneration == y.ObservedGeneration
	})
}

// equalStatus compares statuses, ignoring when conditions last changed.
func equalStatus(a, b v1alpha1.ShimStatus) bool {
	strip := func(s v1alpha1.ShimStatus) v1alpha1.ShimStatus {
		s = *s.DeepCopy()
		for i := range s.Conditions {
			s.Conditions[i].LastTransitionTime = metav1.Time{}
		}
		return s
	}
	return equality.Semantic.DeepEqual(strip(a), strip(b))
}
