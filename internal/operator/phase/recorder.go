package phase

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
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

// Eventf emits an Event regarding an object, related to another (nil:
// none), unless the reconcile of ctx still observes and the Recorder
// checks.
func (r *Recorder) Eventf(ctx context.Context, regarding, related runtime.Object, eventType, reason, action, note string, args ...any) {
	if r == nil {
		return
	}
	if r.report != nil && Of(ctx) == Observing {
		name := ""
		if o, err := meta.Accessor(regarding); err == nil {
			name = o.GetName()
		}
		r.report(fmt.Errorf("event %s %s regarding %s: %w", eventType, reason, name, ErrEventBeforeDecision))
		return
	}
	if r.rec != nil {
		r.rec.Eventf(regarding, related, eventType, reason, action, note, args...)
	}
}
