package decide

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

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
