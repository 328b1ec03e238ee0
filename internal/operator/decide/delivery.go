package decide

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/internal/text"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/rollout"
)

// Delivery is what the decision reads of the progressive-delivery rules:
// the Shim's, and where the status says the rollout of the target stands.
// A rollout that goes back to the previous revision keeps to the pause
// and the windows; it has no steps, gate or revert of its own.
func Delivery(obs *Snapshot) DeliveryRules {
	dl := DeliveryRules{Now: obs.RolloutNow, Windows: obs.Windows}
	if rs := obs.Shim.Spec.RolloutStrategy; rs != nil {
		dl.Paused = rs.Paused
	}
	if obs.Reverted != "" {
		return dl
	}
	dl.Steps, dl.Unjudged = obs.Steps, obs.Unjudged
	if obs.GateRead {
		dl.Gate = JudgeGate(obs, obs.GateFailures)
	}
	if st := shimspec.RolloutOf(obs.Shim, obs.Hash); st != nil {
		dl.Stage = rollout.Stage{Step: int(st.Step)}
		if st.BakeUntil != nil {
			dl.Stage.BakeUntil = st.BakeUntil.Time
		}
		if h := st.Halt; h != nil && !obs.RetriedNow {
			dl.Halt = &Trip{Reason: h.Reason, Message: h.Message}
		}
	}
	prev := obs.PreviousRevision()
	dl.CanRevert = shimspec.FailurePolicy(obs.Shim) == v1alpha1.FailureRevert && prev != nil
	return dl
}

// RecordRollout is what the status records of the rollout of the target
// after the decision: when it started, its stage, the next window, a halt
// (the gate's, new or kept), and the revision it goes back to. A revert
// for nodes that failed (failing) records them as its halt, so that the
// reconciles of the revert, and the status once the nodes are back, still
// say why (the nodes' own failures go as they are installed again).
func RecordRollout(obs *Snapshot, d Delivered, failing []v1alpha1.NodeFailure) *v1alpha1.RolloutStatus {
	now := obs.RolloutNow
	if obs.Reverted != "" {
		st := obs.Shim.Status.Rollout.DeepCopy()
		st.NextWindow = timeOrNil(d.NextWindow)
		return st
	}
	st := &v1alpha1.RolloutStatus{SpecHash: obs.Hash, StartedAt: metav1.NewTime(now.Truncate(time.Second))}
	if old := shimspec.RolloutOf(obs.Shim, obs.Hash); old != nil && !obs.RetriedNow {
		st.StartedAt = old.StartedAt
	}
	st.Steps = int32(len(obs.Steps))
	st.Step = int32(min(d.Stage.Step, len(obs.Steps)))
	st.BakeUntil = timeOrNil(d.Stage.BakeUntil)
	st.NextWindow = timeOrNil(d.NextWindow)
	if h := d.Halt; h != nil {
		st.Halt = &v1alpha1.RolloutHalt{Reason: h.Reason, Message: h.Message, Time: metav1.NewTime(now.Truncate(time.Second))}
		if old := shimspec.RolloutOf(obs.Shim, obs.Hash); old != nil && old.Halt != nil && !d.Tripped {
			st.Halt.Time = old.Halt.Time
		}
	}
	if d.Revert {
		st.RevertedTo = obs.PreviousRevision().SpecHash
		if st.Halt == nil {
			st.Halt = &v1alpha1.RolloutHalt{Reason: v1alpha1.ReasonNodeFailed, Message: failureSummary(failing), Time: metav1.NewTime(now.Truncate(time.Second))}
		}
	}
	return st
}

// failureSummary names the failed nodes and why, for a halt's message.
func failureSummary(failing []v1alpha1.NodeFailure) string {
	if len(failing) == 0 {
		return "a node failed"
	}
	parts := make([]string, 0, len(failing))
	for _, f := range failing {
		parts = append(parts, fmt.Sprintf("node %s failed (%s: %s)", f.Node, f.Reason, text.Truncate(f.Message, 120)))
	}
	return strings.Join(parts, "; ")
}

// HaltTrip is the recorded halt as the decision reads it (nil: none).
func HaltTrip(h *v1alpha1.RolloutHalt) *Trip {
	if h == nil {
		return nil
	}
	return &Trip{Reason: h.Reason, Message: h.Message}
}

func timeOrNil(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	mt := metav1.NewTime(t.Truncate(time.Second))
	return &mt
}

// DeliveryRequeue is when a rollout is looked at again (after: when it
// would be otherwise; 0: not by time): at once to start a revert; when a
// bake ends, a window opens, or the gate looks at the workloads again.
func DeliveryRequeue(obs *Snapshot, d Decision, after, gatePeriod time.Duration) time.Duration {
	dl := d.Delivered
	if dl.Revert && obs.Reverted == "" {
		return time.Second
	}
	now := obs.RolloutNow
	sooner := func(at time.Time) {
		if w := max(at.Sub(now), time.Second); !at.IsZero() && (after == 0 || w < after) {
			after = w
		}
	}
	switch dl.Hold {
	case HoldBaking:
		sooner(dl.Stage.BakeUntil)
	case HoldWindow:
		sooner(dl.NextWindow)
	}
	if !dl.NextWindow.IsZero() {
		sooner(dl.NextWindow)
	}
	if obs.GateWatches() && dl.Halt == nil {
		sooner(now.Add(gatePeriod))
	}
	return after
}
