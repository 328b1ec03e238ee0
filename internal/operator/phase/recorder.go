package phase

import (
	"context"
	"fmt"

	"k8s.io/client-go/tools/events"

	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// Recorder emits a reconcile's Events, knowing (from its context) where
// the reconcile is. The events API's recorder takes no context, so each
// role that emits Events holds a Recorder instead and passes its own.
type Recorder struct {
	rec    events.EventRecorder
	report Report
}

// NewRecorder returns a Recorder emitting through rec (nil: emits
// nothing). With a report, an Event emitted while the calling reconcile
// observes is reported and dropped (ErrEventBeforeDecision), as Checked
// refuses a write then.
func NewRecorder(rec events.EventRecorder, report Report) *Recorder {
	return &Recorder{rec: rec, report: report}
}

// Say emits the Notice of a plan as an Event regarding its Shim (the
// reconciled shim, unless it is about another), unless the reconcile of
// ctx still observes and the Recorder checks. A Notice is all an Event
// can be: the plan says every Event (decide.Notice), the executor only
// emits it.
func (r *Recorder) Say(ctx context.Context, shim *v1alpha1.Shim, n decide.Notice) {
	if r == nil {
		return
	}
	regarding := n.Regarding(shim)
	if r.report != nil && Of(ctx) == Observing {
		r.report(fmt.Errorf("event %s %s regarding %s: %w", n.Type, n.Reason, regarding.Name, ErrEventBeforeDecision))
		return
	}
	if r.rec != nil {
		r.rec.Eventf(regarding, n.Related(), n.Type, n.Reason, n.Action, "%s", n.Note)
	}
}
