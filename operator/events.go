package operator

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// maxEventNodes is how many nodes an Event of a wave names.
const maxEventNodes = 10

// nodeEvents gathers Normal events about single nodes (a Job started, a
// node installed or cleaned), so that a wave of a hundred nodes makes one
// Event per reason, not a hundred: each Event is an API write, and a
// rollout's writes per node are a Job and a node patch.
// Warnings (a failed node) are still one Event per node.
type nodeEvents struct {
	mu    sync.Mutex
	notes map[[2]string][]string // reason, action → one note per node
}

func (e *nodeEvents) add(reason, action, note string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.notes == nil {
		e.notes = map[[2]string][]string{}
	}
	k := [2]string{reason, action}
	e.notes[k] = append(e.notes[k], note)
}

// eventEvery is how often a Shim's Normal per-node events are emitted
// while its rollout goes on: the notes of every reconcile in between are
// gathered, so that a rollout makes a few Events per reason, not one per
// reconcile. A settled rollout emits what it has at once.
const eventEvery = 5 * time.Second

// pendingEvents are the Shims' gathered notes and when each last emitted.
type pendingEvents struct {
	mu      sync.Mutex
	byShim  map[string]*nodeEvents
	emitted pace
}

// flushEvents adds the reconcile's notes to the Shim's and emits them, one
// Event per reason, when the rollout settled or eventEvery passed since
// the last; otherwise it says when to reconcile again to emit them.
func (r *reporter) flushEvents(shim *v1alpha1.Shim, e *nodeEvents, settled bool, now time.Time) (due time.Time) {
	p := &r.pending
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byShim == nil {
		p.byShim = map[string]*nodeEvents{}
	}
	all := p.byShim[shim.Name]
	if all == nil {
		all = &nodeEvents{}
		p.byShim[shim.Name] = all
	}
	e.mu.Lock()
	for k, notes := range e.notes {
		for _, n := range notes {
			all.add(k[0], k[1], n)
		}
	}
	e.notes = nil
	e.mu.Unlock()
	if len(all.notes) == 0 {
		return time.Time{}
	}
	if next := p.emitted.next(shim.Name, eventEvery); !settled && now.Before(next) {
		return next
	}
	r.emit(shim, all)
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

// emit emits one Event per reason: the number of nodes and the notes of
// the first maxEventNodes, sorted.
func (r *reporter) emit(shim *v1alpha1.Shim, e *nodeEvents) {
	keys := make([][2]string, 0, len(e.notes))
	for k := range e.notes {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return strings.Compare(a[0]+a[1], b[0]+b[1]) })
	for _, k := range keys {
		notes := slices.Sorted(slices.Values(e.notes[k]))
		msg := strings.Join(notes[:min(len(notes), maxEventNodes)], "; ")
		if more := len(notes) - maxEventNodes; more > 0 {
			msg += fmt.Sprintf("; and %d more", more)
		}
		if len(notes) > 1 {
			msg = fmt.Sprintf("%d nodes: %s", len(notes), msg)
		}
		r.event(shim, nil, corev1.EventTypeNormal, k[0], k[1], "%s", msg)
	}
	e.notes = nil
}
