package watch

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Store holds pointers to the informer cache's own objects of one kind, so
// that a reconcile reads every Node and Job without the copy a List makes:
// a List fills a slice of values (768 bytes per Node, 1,288 per Job, and
// the Jobs' multi-namespace cache copies them twice more), which at 5,000
// nodes was over 20 MB of a reconcile's live heap, doubled by the
// collector's headroom into the operator's peak memory.
//
// It is fed by the controller's own event handler for that kind (handler),
// which records every event before it enqueues: a reconcile that an event
// started always reads that event's object.
type Store[T client.Object] struct {
	mu   sync.RWMutex
	objs map[types.NamespacedName]T
}

func NewStore[T client.Object]() *Store[T] {
	return &Store[T]{objs: map[types.NamespacedName]T{}}
}

func (s *Store[T]) Set(o T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objs[client.ObjectKeyFromObject(o)] = o
}

func (s *Store[T]) Remove(o T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.objs, client.ObjectKeyFromObject(o))
}

// List returns the objects that keep says to; the caller must not change
// them (they are the cache's).
func (s *Store[T]) List(keep func(T) bool) []T {
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

// Handler records each event's object, then passes the events that pass
// lets through to next (the predicates that a watch would otherwise apply
// before any handler: the store needs every event).
func (s *Store[T]) Handler(next handler.EventHandler, pass predicate.Predicate) handler.EventHandler {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) {
			if o, ok := e.Object.(T); ok {
				s.Set(o)
			}
			if pass.Create(e) {
				next.Create(ctx, e, q)
			}
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			if o, ok := e.ObjectNew.(T); ok {
				s.Set(o)
			}
			if pass.Update(e) {
				next.Update(ctx, e, q)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q queue) {
			if o, ok := e.Object.(T); ok {
				s.Remove(o)
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
