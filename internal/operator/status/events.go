package status

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// pendingEvents are the Shims' gathered notes and when each last emitted.
type pendingEvents struct {
	mu      sync.Mutex
	byShim  map[string]*NodeEvents
	emitted pace
}

// Flush adds the reconcile's notes to the Shim's and, when the plan says
// so (emit: decide.EventPlan), emits them, one Event per reason;
// pending: notes are held back, for the time the plan gave.
func (r *Reporter) Flush(ctx context.Context, shim *v1alpha1.Shim, e *NodeEvents, emit bool, now time.Time) (pending bool) {
	p := &r.pending
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byShim == nil {
		p.byShim = map[string]*NodeEvents{}
	}
	all := p.byShim[shim.Name]
	if all == nil {
		all = &NodeEvents{}
		p.byShim[shim.Name] = all
	}
	all.Merge(e)
	if all.Empty() {
		return false
	}
	if !emit {
		return true
	}
	r.emit(ctx, shim, all)
	p.emitted.wrote(shim.Name, now)
	return false
}

// LastEmitted is when the Shim's gathered Events last went out (zero: not
// since the operator started): a snapshot reads it, and its plan paces
// them by it (decide.EventsAt).
func (r *Reporter) LastEmitted(name string) time.Time {
	return r.pending.emitted.next(name, 0)
}

// forget drops a deleted Shim's notes.
func (p *pendingEvents) forget(shim string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.byShim, shim)
	p.emitted.forget(shim)
}

// emit emits one Event per reason (NodeEvents.Take).
func (r *Reporter) emit(ctx context.Context, shim *v1alpha1.Shim, e *NodeEvents) {
	for _, ev := range e.Take() {
		r.event(ctx, shim, nil, corev1.EventTypeNormal, ev.Reason, ev.Action, "%s", ev.Note)
	}
}
