package operator

import (
	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/status"
)

// acting is what carrying out one reconcile's plan keeps of its own, so
// that the snapshot and the plan are only read: the per-node Events it
// gathers (decide.Note, a Job started), the RuntimeClasses as its writes
// leave them (a takeover, then the update of the class taken over), what
// the plan says of the Events gathered (nil: no plan was made), and
// whether the snapshot's notices went out.
type acting struct {
	obs       *observed
	events    status.NodeEvents
	classes   *decide.ClassSet
	eventPlan *decide.EventPlan
	notified  bool
}

func newActing(obs *observed) *acting {
	return &acting{obs: obs, classes: obs.Classes.Clone()}
}
