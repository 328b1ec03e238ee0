package operator

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/phase"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// uninstallAll removes the shim from every node that has it, rolling; then
// deletes the RuntimeClasses and lets the Shim go.
func (r *Reconciler) uninstallAll(ctx context.Context, run *acting, obs *observed, records []decide.Action) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(obs.Shim, Finalizer) {
		return ctrl.Result{}, nil
	}
	p, err := decide.PlanRemoval(obs, records, shimspec.Planner(obs.Shim, obs.Hash), decide.Rules{Settings: r.opts.settings(), ServerVersion: r.opts.ServerVersion, Resync: r.opts.ResyncPeriod})
	if err != nil {
		return ctrl.Result{}, err
	}
	phase.Decided(ctx)
	return r.carryOutRemoval(ctx, run, p)
}

// carryOutRemoval carries out a deleted Shim's plan, in its order: the
// records, the relabels, the fences of its RuntimeClasses, the uninstall Jobs whose reservations the node
// gate commits, the evictions, the status; once every node is clean, the
// release.
func (r *Reconciler) carryOutRemoval(ctx context.Context, run *acting, p *decide.Plan) (ctrl.Result, error) {
	obs := run.obs
	run.eventPlan = &p.Events // read as the reconcile ends
	r.notify(ctx, run)
	for _, acts := range [][]decide.Action{p.Records, p.Relabel, p.Disrupt} {
		if err := r.exec.act(ctx, run, acts); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.classes.Fence(ctx, obs.Shim, run.classes, p.Classes); err != nil {
		return ctrl.Result{}, err
	}
	refused, err := r.starter.startNodes(ctx, run, p.Starts)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.exec.act(ctx, run, p.Evict); err != nil {
		return ctrl.Result{}, err
	}
	if !p.Decision.Removal.Done {
		if !refused {
			if err := r.report.Update(ctx, obs, p.Status); err != nil {
				return ctrl.Result{}, err
			}
			return ctrl.Result{RequeueAfter: p.Requeue}, nil
		}
		return ctrl.Result{RequeueAfter: p.RequeueRefused}, nil
	}
	// Every node is clean: what the Shim recorded on nodes goes, then its
	// RuntimeClasses, then its finalizer.
	if err := r.exec.act(ctx, run, p.Forget); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.classes.DeleteAll(ctx, obs.Shim, run.classes, p.Delete); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.exec.act(ctx, run, p.Finalize); err != nil {
		return ctrl.Result{}, err
	}
	r.released.add(obs.Shim)
	log.FromContext(ctx).Info("shim removed from every node", "shim", obs.Shim.Name)
	r.metrics.Forget(obs.Shim.Name)
	r.reads.Keep(obs.Shim.Name, nil)
	return ctrl.Result{}, nil
}

// released remembers the Shims whose finalizer this operator removed, by
// UID, until the cache no longer has them. A reconcile that reads one from
// a cache behind the release does nothing: the garbage collector deletes
// the Shim's Jobs once it is gone, and their deletions come through
// another watch, which can be ahead; read beside the Shim as it was, a
// node whose uninstall Job went first would have its finished install Job
// recorded again, then be uninstalled for a Shim that is no more.
type released struct {
	mu   sync.Mutex
	uids map[string]types.UID
}

func (r *released) add(s *v1alpha1.Shim) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.uids == nil {
		r.uids = map[string]types.UID{}
	}
	r.uids[s.Name] = s.UID
}

// has: s is one this operator released.
func (r *released) has(s *v1alpha1.Shim) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	uid, ok := r.uids[s.Name]
	return ok && uid == s.UID
}

// forget: the cache no longer has the Shim name.
func (r *released) forget(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.uids, name)
}
