package operator

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/shimkit/shimkit/internal/operator/phase"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/internal/operator/watch"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// RBAC the reconciler needs, exactly (operator/config/rbac is generated
// from these).
//
// +kubebuilder:rbac:groups=containerd.x-k8s.io,resources=shims,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=containerd.x-k8s.io,resources=shims/status,verbs=patch
// +kubebuilder:rbac:groups=containerd.x-k8s.io,resources=shims/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;patch;delete,namespace=shimkit-system
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list,namespace=shimkit-system
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create
// +kubebuilder:rbac:groups="",resources=secrets;configmaps,verbs=get,namespace=shimkit-system
// +kubebuilder:rbac:groups=node.k8s.io,resources=runtimeclasses,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager adds the reconciler to a manager: it watches Shims, the
// Jobs they own, RuntimeClasses (one of the names a Shim's spec gives
// requeues that Shim, whoever owns it: a foreign one that goes lets the
// Shim publish its own), and Nodes (a node that joins, leaves, changes
// labels or its operating system, architecture or container runtime
// requeues every Shim). The installer pods' results are read from the API
// server directly (list, once per finished Job). Pods and Events are not
// watched: the health gate's reads (workload.Failures) start their
// informers, on a Shim's first gate. The Node and Job handlers also keep
// the reconciler's stores of the cache's own objects (store.go).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.reader = mgr.GetAPIReader()
	if report := r.opts.PhaseReport; report != nil {
		r.reader = phase.CheckedReader(r.reader, report)
	}
	if r.opts.ServerVersion == "" {
		r.opts.ServerVersion = serverVersion(mgr.GetConfig())
	}
	// The roles read through the API server reader now set (the Secrets
	// and ConfigMaps a resolution reads, the installer pods' results, the
	// ControllerRevisions, runtime-class-manager's Shim are not cached).
	newRoles(r, r.deps, r.gate)
	// The leader publishes the options it plans with, for kubectl shimkit
	// plan (not fatal: a plan then says it used the defaults).
	publish := manager.RunnableFunc(func(ctx context.Context) error {
		if err := publishOptions(ctx, mgr.GetClient(), r.opts); err != nil {
			log.FromContext(ctx).Error(err, "kubectl shimkit plan will plan with the defaults")
		}
		<-ctx.Done()
		return nil
	})
	if err := mgr.Add(publish); err != nil {
		return err
	}
	r.nodes, r.jobs = watch.NewStore[*corev1.Node](), watch.NewStore[*batchv1.Job]()
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
	shimsNaming := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, rc client.Object) []reconcile.Request {
		var shims v1alpha1.ShimList
		if err := mgr.GetClient().List(ctx, &shims); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		for i := range shims.Items {
			for _, spec := range shimspec.Classes(&shims.Items[i]) {
				if spec.Name == rc.GetName() {
					reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&shims.Items[i])})
					break
				}
			}
		}
		return reqs
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("shim").
		For(&v1alpha1.Shim{}, builder.WithPredicates(watch.ShimChanged())).
		// Every Shim that owns a Job: a batch Job's partners too.
		Watches(&batchv1.Job{}, r.jobs.Handler(r.reads.Prefetching(handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &v1alpha1.Shim{})), watch.JobChanged())).
		Watches(&nodev1.RuntimeClass{}, shimsNaming).
		Watches(&corev1.Node{}, r.nodes.Handler(allShims, predicate.Or(watch.ForeignLabelChanged(), watch.NodeLifecycle(), watch.NodeInfoChanged()))).
		Complete(r)
}
