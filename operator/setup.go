package operator

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// RBAC the reconciler needs, exactly (operator/config/rbac is generated
// from these).
//
// +kubebuilder:rbac:groups=containerd.x-k8s.io,resources=shims,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=containerd.x-k8s.io,resources=shims/status,verbs=patch
// +kubebuilder:rbac:groups=containerd.x-k8s.io,resources=shims/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete,namespace=shimkit-system
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list,namespace=shimkit-system
// +kubebuilder:rbac:groups=node.k8s.io,resources=runtimeclasses,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager adds the reconciler to a manager: it watches Shims, the
// Jobs they own, the RuntimeClasses they own, and Nodes (a node that
// joins, leaves or changes labels requeues every Shim). The installer pods'
// results are read from the API server directly (list, once per finished
// Job), so the manager caches no pods.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.reader = mgr.GetAPIReader()
	if err := r.metrics.Register(crmetrics.Registry); err != nil {
		return err
	}
	allShims := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		var shims v1alpha1.ShimList
		if err := mgr.GetClient().List(ctx, &shims); err != nil {
			return nil
		}
		reqs := make([]reconcile.Request, len(shims.Items))
		for i, s := range shims.Items {
			reqs[i].Name = s.Name
		}
		return reqs
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("shim").
		For(&v1alpha1.Shim{}).
		Owns(&batchv1.Job{}).
		Owns(&nodev1.RuntimeClass{}).
		Watches(&corev1.Node{}, allShims, builder.WithPredicates(predicate.Or(predicate.LabelChangedPredicate{}, nodeLifecycle()))).
		Complete(r)
}

// nodeLifecycle passes node creation and deletion (label changes pass
// through LabelChangedPredicate), not the kubelet's status heartbeats.
func nodeLifecycle() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return true },
		DeleteFunc:  func(e event.DeleteEvent) bool { return true },
		UpdateFunc:  func(e event.UpdateEvent) bool { return false },
		GenericFunc: func(e event.GenericEvent) bool { return false },
	}
}
