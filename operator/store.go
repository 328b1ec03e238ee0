package operator

import (
	"context"
	"fmt"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/shimkit/shimkit/operator/jobview"
)

// store holds pointers to the informer cache's own objects of one kind, so
// that a reconcile reads every Node and Job without the copy a List makes:
// a List fills a slice of values (768 bytes per Node, 1,288 per Job, and
// the Jobs' multi-namespace cache copies them twice more), which at 5,000
// nodes was over 20 MB of a reconcile's live heap, doubled by the
// collector's headroom into the operator's peak memory.
//
// It is fed by the controller's own event handler for that kind (handler),
// which records every event before it enqueues: a reconcile that an event
// started always reads that event's object.
type store[T client.Object] struct {
	mu   sync.RWMutex
	objs map[types.NamespacedName]T
}

func newStore[T client.Object]() *store[T] {
	return &store[T]{objs: map[types.NamespacedName]T{}}
}

func (s *store[T]) set(o T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objs[client.ObjectKeyFromObject(o)] = o
}

func (s *store[T]) remove(o T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.objs, client.ObjectKeyFromObject(o))
}

// list returns the objects that keep says to; the caller must not change
// them (they are the cache's).
func (s *store[T]) list(keep func(T) bool) []T {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]T, 0, len(s.objs))
	for _, o := range s.objs {
		if keep(o) {
			out = append(out, o)
		}
	}
	return out
}

// handler records each event's object, then passes the events that pass
// lets through to next (the predicates that a watch would otherwise apply
// before any handler: the store needs every event).
func (s *store[T]) handler(next handler.EventHandler, pass predicate.Predicate) handler.EventHandler {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) {
			if o, ok := e.Object.(T); ok {
				s.set(o)
			}
			if pass.Create(e) {
				next.Create(ctx, e, q)
			}
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			if o, ok := e.ObjectNew.(T); ok {
				s.set(o)
			}
			if pass.Update(e) {
				next.Update(ctx, e, q)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q queue) {
			if o, ok := e.Object.(T); ok {
				s.remove(o)
			}
			if pass.Delete(e) {
				next.Delete(ctx, e, q)
			}
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q queue) {
			if pass.Generic(e) {
				next.Generic(ctx, e, q)
			}
		},
	}
}

// listNodes returns every Node: the cache's own (r.nodes, once
// SetupWithManager wired it), or read through the client.
func (r *Reconciler) listNodes(ctx context.Context) ([]*corev1.Node, error) {
	if r.nodes != nil {
		return r.nodes.list(func(*corev1.Node) bool { return true }), nil
	}
	var nodes corev1.NodeList
	if err := r.client.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	return pointers(nodes.Items), nil
}

// listJobs returns the operator's Jobs (every Shim's: the node gate counts
// them all), as listNodes.
func (r *Reconciler) listJobs(ctx context.Context) ([]*batchv1.Job, error) {
	if r.jobs != nil {
		return r.jobs.list(func(j *batchv1.Job) bool {
			return j.Namespace == r.opts.Namespace && j.Labels[jobview.LabelManagedBy] == jobview.ManagedBy
		}), nil
	}
	var jobs batchv1.JobList
	if err := r.client.List(ctx, &jobs, client.InNamespace(r.opts.Namespace), client.MatchingLabels{jobview.LabelManagedBy: jobview.ManagedBy}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list Jobs in %s: %w", r.opts.Namespace, err)
	}
	return pointers(jobs.Items), nil
}

func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
