package status

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// eventEvery is how often a Shim's Normal per-node events are emitted
// while its rollout goes on: the notes of every reconcile in between are
// gathered, so that a rollout makes a few Events per reason, not one per
// reconcile. A settled rollout emits what it has at once.
const eventEvery = 5 * time.Second

// pendingEvents are the Shims' gathered notes and when each last emitted.
type pendingEvents struct {
	mu      sync.Mutex
	byShim  map[string]*NodeEvents
	emitted pace
}

// Flush adds the reconcile's notes to the Shim's and emits them, one
// Event per reason, when the rollout settled or eventEvery passed since
// the last; otherwise it says when to reconcile again to emit them.
func (r *Reporter) Flush(ctx context.Context, shim *v1alpha1.Shim, e *NodeEvents, settled bool, now time.Time) (due time.Time) {
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
		return time.Time{}
	}
	if next := p.emitted.next(shim.Name, eventEvery); !settled && now.Before(next) {
		return next
	}
	r.emit(ctx, shim, all)
	p.emitted.wrote(shim.Name, now)
	return time.Time{}
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
