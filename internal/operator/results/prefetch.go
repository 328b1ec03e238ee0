package results

import (
	"context"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/nodejob"
)

// prefetches are the installer results read ahead: the moment a Job's
// completion arrives on the watch, its pods are listed (the one GET per
// node that recordJob would make), while the reconcile it enqueues may
// still wait for the one before it. The reconcile then takes the result
// instead of reading it on its own critical path, between the Job's
// completion and the node's label (BENCHMARKS.md). Only completed Jobs:
// their pods have ended and written their results; a failed Job's pod
// may still be rolling back (a deadline's SIGTERM) and is read when the
// reconcile gets to it, as before.
type prefetches struct {
	mu   sync.Mutex
	jobs map[types.UID]*prefetch
	// sem bounds the reads in flight.
	sem chan struct{}
}

// prefetch is one Job's read: done closes when results (by Shim name:
// a batch Job's each owner's) or err are set.
type prefetch struct {
	done    chan struct{}
	results map[string]*plan.NodeResult
	err     error
}

// prefetchTimeout bounds one read ahead (the manager's context is not at
// hand in an event handler).
const prefetchTimeout = 30 * time.Second

// prefetchResults reads the Job's results ahead, once, for each Shim
// that owns it.
func (r *Reader) prefetchResults(job *batchv1.Job) {
	p := &r.prefetch
	owners := make([]string, 0, len(job.OwnerReferences))
	for _, o := range job.OwnerReferences {
		if o.Kind == "Shim" {
			owners = append(owners, o.Name)
		}
	}
	if len(owners) == 0 {
		return
	}
	f := &prefetch{done: make(chan struct{})}
	p.mu.Lock()
	if p.jobs == nil {
		p.jobs, p.sem = map[types.UID]*prefetch{}, make(chan struct{}, 64)
	}
	if _, ok := p.jobs[job.UID]; ok {
		p.mu.Unlock()
		return
	}
	p.jobs[job.UID] = f
	sem := p.sem
	p.mu.Unlock()
	go func() {
		defer close(f.done)
		sem <- struct{}{}
		defer func() { <-sem }()
		ctx, cancel := context.WithTimeout(context.Background(), prefetchTimeout)
		defer cancel()
		pods, err := Pods(ctx, r.reader, job)
		if err != nil {
			f.err = err
			return
		}
		f.results = make(map[string]*plan.NodeResult, len(owners))
		for _, shim := range owners {
			f.results[shim] = nodejob.JobResult(job, pods, shim)
		}
	}()
}

// take returns the Shim's result read ahead for the Job (ok: there was
// one, read without error), waiting for a read still in flight; each is
// taken once, and the Job's entry goes with its last Shim's.
func (p *prefetches) take(ctx context.Context, job types.UID, shim string) (res *plan.NodeResult, ok bool) {
	p.mu.Lock()
	f := p.jobs[job]
	p.mu.Unlock()
	if f == nil {
		return nil, false
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		return nil, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if f.err != nil {
		delete(p.jobs, job)
		return nil, false
	}
	res, ok = f.results[shim]
	delete(f.results, shim)
	if len(f.results) == 0 {
		delete(p.jobs, job)
	}
	return res, ok
}

// forget drops what was read ahead for a Job that is gone.
func (p *prefetches) forget(job types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.jobs, job)
}

// resultOf is the Shim's result of the finished Job: read ahead, or read
// now (readResult).
func (r *Reader) resultOf(ctx context.Context, job *batchv1.Job, shim string) (*plan.NodeResult, error) {
	if res, ok := r.prefetch.take(ctx, job.UID, shim); ok {
		return res, nil
	}
	return r.readResult(ctx, job, shim)
}

// complete: the Job has its Complete condition.
func complete(j *batchv1.Job) bool { return jobview.ViewOf(j).Condition(batchv1.JobComplete) != nil }

// Prefetching wraps the Jobs' event handler: a Job of the operator's
// that just completed has its results read ahead before its Shims are
// enqueued; a deleted Job's are dropped.
func (r *Reader) Prefetching(next handler.EventHandler) handler.EventHandler {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) { next.Create(ctx, e, q) },
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			a, aok := e.ObjectOld.(*batchv1.Job)
			b, bok := e.ObjectNew.(*batchv1.Job)
			if aok && bok && b.Namespace == r.namespace && b.Labels[jobview.LabelManagedBy] == jobview.ManagedBy && !complete(a) && complete(b) {
				r.prefetchResults(b)
			}
			next.Update(ctx, e, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q queue) {
			if e.Object != nil {
				r.prefetch.forget(e.Object.GetUID())
			}
			next.Delete(ctx, e, q)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q queue) { next.Generic(ctx, e, q) },
	}
}
