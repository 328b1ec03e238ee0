package status

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// pendingEvents are the Shims' gathered notes and when each last emitted.
type pendingEvents struct {
	mu      sync.Mutex
	byShim  map[string]*NodeEvents
	emitted pace
}

// Flush adds the reconcile's notes to the Shim's and, when the plan says
// so (emit: decide.EventPlan), emits them, one Event per reason; else
// they are held back (Held) until the plan brings the Shim back.
func (r *Reporter) Flush(ctx context.Context, shim *v1alpha1.Shim, e *NodeEvents, emit bool, now time.Time) {
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
	if all.Empty() || !emit {
		return
	}
	r.emit(ctx, shim, all)
	p.emitted.wrote(shim.Name, now)
}

// LastEmitted is when the Shim's gathered Events last went out (zero: not
// since the operator started): a snapshot reads it, and its plan paces
// them by it (decide.EventsAt).
func (r *Reporter) LastEmitted(name string) time.Time {
	return r.pending.emitted.next(name, 0)
}

// Held reports whether notes of the Shim are held back: a snapshot reads
// it, and its plan comes back for them (decide.Plan.Requeue).
func (r *Reporter) Held(name string) bool {
	p := &r.pending
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.byShim[name]
	return e != nil && !e.Empty()
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
	for _, n := range e.Take() {
		r.recorder.Say(ctx, shim, n)
	}
}

// NodeEvents gathers the Normal events about single nodes that carrying
// out a plan makes (decide.Note: a node installed or cleaned; a Job
// started), so that a wave of a hundred nodes makes one
// Event per reason, not a hundred: each Event is an API write, and a
// rollout's writes per node are a Job and a node patch.
// Warnings (a failed node) are still one Event per node.
type NodeEvents struct {
	mu    sync.Mutex
	notes map[[2]string][]string // reason, action → one note per node
}

// Add gathers the note of one node under reason and action.
func (e *NodeEvents) Add(reason, action, note string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.add(reason, action, note)
}

func (e *NodeEvents) add(reason, action, note string) {
	if e.notes == nil {
		e.notes = map[[2]string][]string{}
	}
	k := [2]string{reason, action}
	e.notes[k] = append(e.notes[k], note)
}

// Merge moves the notes of from into e.
func (e *NodeEvents) Merge(from *NodeEvents) {
	from.mu.Lock()
	notes := from.notes
	from.notes = nil
	from.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, ns := range notes {
		for _, n := range ns {
			e.add(k[0], k[1], n)
		}
	}
}

// Empty reports whether no note is gathered.
func (e *NodeEvents) Empty() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.notes) == 0
}

// Take returns one Event per reason and action, sorted
// (decide.Gathered), and forgets the notes.
func (e *NodeEvents) Take() []decide.Notice {
	e.mu.Lock()
	defer e.mu.Unlock()
	keys := slices.SortedFunc(maps.Keys(e.notes), func(a, b [2]string) int { return strings.Compare(a[0]+a[1], b[0]+b[1]) })
	out := make([]decide.Notice, 0, len(keys))
	for _, k := range keys {
		out = append(out, decide.Gathered(k[0], k[1], e.notes[k]))
	}
	e.notes = nil
	return out
}
