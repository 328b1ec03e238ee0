package decide

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// Progress is what the metrics show of the rollout: its step (-1: none),
// whether it is paused, and the reason of a health gate that tripped now
// ("": none).
type Progress struct {
	Step    int
	Paused  bool
	Tripped string
}

// decisionNotices are the decision's Warnings: one per node no plan
// could be built for, and the refusal's one (pin emits none for it), when
// the status does not show it yet; then where the decision left the
// rollout: a tripped gate and a revert, each once.
func decisionNotices(obs *Snapshot, d Decision, rec *v1alpha1.RolloutStatus) []Notice {
	var out []Notice
	for _, v := range d.Unplanned {
		out = append(out, Notice{Type: corev1.EventTypeWarning, Reason: "InstallFailed", Action: "Install", Node: v.Node,
			Note: FailureNote(v.Node.Name, string(PlanReason(v.PlanErr)), v.PlanErr.Error())})
	}
	if obs.Refusal != nil && !obs.Refusal.Shown(obs.Shim) {
		out = append(out, Notice{Type: corev1.EventTypeWarning, Reason: obs.Refusal.Reason, Action: "Install", Note: obs.Refusal.Message})
	}
	dl := d.Delivered
	if dl.Tripped {
		out = append(out, Notice{Type: corev1.EventTypeWarning, Reason: dl.Halt.Reason, Action: "Rollout", Note: "the rollout halts: " + dl.Halt.Message})
	}
	if old := shimspec.RolloutOf(obs.Shim, obs.Hash); dl.Revert && obs.Reverted == "" && (old == nil || old.RevertedTo == "") {
		out = append(out, Notice{Type: corev1.EventTypeWarning, Reason: v1alpha1.ReasonReverting, Action: "Rollout",
			Note: "the rollout of " + obs.Hash + " failed (" + RevertCause(nil, HaltTrip(rec.Halt)) + "): the nodes updated go back to revision " + rec.RevertedTo})
	}
	return out
}

// progressOf is the rollout's Progress as the decision leaves it.
func progressOf(obs *Snapshot, d Decision) Progress {
	dl := d.Delivered
	p := Progress{Step: -1, Paused: dl.Hold == HoldPaused}
	if len(obs.Steps) > 0 && obs.Reverted == "" && dl.Stage.Step < len(obs.Steps) {
		p.Step = dl.Stage.Step
	}
	if dl.Tripped {
		p.Tripped = dl.Halt.Reason
	}
	return p
}

// EventEvery is how often a Shim's Normal per-node Events (Note) are
// emitted while its rollout goes on: the notes of every reconcile in
// between are gathered, so that a rollout makes a few Events per reason,
// not one per reconcile. A settled rollout emits what it has at once.
const EventEvery = 5 * time.Second

// EventPlan is what a plan does with the Shim's gathered per-node Events:
// Emit them now, or hold them back until Due (then the Shim comes back).
type EventPlan struct {
	Emit bool
	Due  time.Time
}

// EventsAt paces the Shim's gathered Events: they go out when the rollout
// settled, or EventEvery after they last went out (emitted), else then.
func EventsAt(emitted, now time.Time, settled bool) EventPlan {
	if next := emitted.Add(EventEvery); !settled && now.Before(next) {
		return EventPlan{Due: next}
	}
	return EventPlan{Emit: true}
}

// Notice is an Event about the Shim that the reconcile found while it
// read its snapshot (an artifact resolved anew, a revert) or that its
// plan decided (a node no plan could be built for, a tripped gate),
// related to a node (nil: the Shim alone): emitted once the decision is
// complete, as every Event is.
type Notice struct {
	Type, Reason, Action, Note string
	Node                       *corev1.Node
}
