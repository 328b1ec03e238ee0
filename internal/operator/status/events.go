package status

import (
	"context"
	"fmt"
	"slices"
	"strings"
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

// MaxEventNodes is how many nodes an Event of a wave names.
const MaxEventNodes = 10

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

// Event is one Normal Event of a Shim: a reason, an action and a note
// naming the nodes.
type Event struct{ Reason, Action, Note string }

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

// Take returns one Event per reason and action, sorted, each with the
// number of nodes and the notes of the first MaxEventNodes (sorted), and
// forgets the notes.
func (e *NodeEvents) Take() []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	keys := make([][2]string, 0, len(e.notes))
	for k := range e.notes {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return strings.Compare(a[0]+a[1], b[0]+b[1]) })
	out := make([]Event, 0, len(keys))
	for _, k := range keys {
		notes := slices.Sorted(slices.Values(e.notes[k]))
		msg := strings.Join(notes[:min(len(notes), MaxEventNodes)], "; ")
		if more := len(notes) - MaxEventNodes; more > 0 {
			msg += fmt.Sprintf("; and %d more", more)
		}
		if len(notes) > 1 {
			msg = fmt.Sprintf("%d nodes: %s", len(notes), msg)
		}
		out = append(out, Event{Reason: k[0], Action: k[1], Note: msg})
	}
	e.notes = nil
	return out
}
