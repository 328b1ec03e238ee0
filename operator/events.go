package operator

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// maxEventNodes is how many nodes an Event of a wave names.
const maxEventNodes = 10

// nodeEvents gathers one reconcile's Normal events about single nodes (a
// Job started, a node installed or cleaned), so that a wave of a hundred
// nodes makes one Event per reason, not a hundred: each Event is an API
// write, and a rollout's writes per node are a Job and a node patch.
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

// flush emits one Event per reason: the number of nodes and the notes of
// the first maxEventNodes, sorted.
func (r *Reconciler) flushEvents(shim *v1alpha1.Shim, e *nodeEvents) {
	e.mu.Lock()
	defer e.mu.Unlock()
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
