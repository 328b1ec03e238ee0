package operator

import (
	"context"

	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/phase"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/rollout"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// uninstallAll removes the shim from every node that has it, rolling; then
// deletes the RuntimeClasses and lets the Shim go.
func (r *Reconciler) uninstallAll(ctx context.Context, obs *observed, records []decide.Action) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(obs.Shim, Finalizer) {
		return ctrl.Result{}, nil
	}
	p, err := decide.PlanRemoval(obs, records, shimspec.Planner(obs.Shim, obs.Hash), decide.Rules{Settings: r.opts.settings(), Resync: r.opts.ResyncPeriod})
	if err != nil {
		return ctrl.Result{}, err
	}
	phase.Decided(ctx)
	r.notify(ctx, obs)
	d := p.Decision
	if err := r.exec.act(ctx, p.Records); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.exec.act(ctx, p.Relabel); err != nil {
		return ctrl.Result{}, err
	}
	if _, err := r.starter.startNodes(ctx, obs, p.Starts); err != nil {
		return ctrl.Result{}, err
	}
	obs.Settled = d.Removal.Done || d.Removal.Halted
	if !d.Removal.Done {
		if err := r.report.Update(ctx, obs, rollout.Plan{}, d.Removal, decide.ClassPlan{}); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: p.Requeue}, nil
	}
	return ctrl.Result{}, r.release(ctx, obs, p.Forget)
}

// release lets a deleted Shim go once every node is clean: what it
// recorded on nodes goes, then its RuntimeClasses, then its finalizer.
func (r *Reconciler) release(ctx context.Context, obs *observed, forget []decide.Action) error {
	if err := r.exec.act(ctx, forget); err != nil {
		return err
	}
	if err := r.classes.DeleteAll(ctx, obs); err != nil {
		return err
	}
	patch := client.MergeFrom(obs.Shim.DeepCopy())
	controllerutil.RemoveFinalizer(obs.Shim, Finalizer)
	if err := r.client.Patch(ctx, obs.Shim, patch); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	log.FromContext(ctx).Info("shim removed from every node", "shim", obs.Shim.Name)
	r.metrics.Forget(obs.Shim.Name)
	r.reads.Keep(obs.Shim.Name, nil)
	return nil
}
