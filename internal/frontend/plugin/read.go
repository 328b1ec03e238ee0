package plugin

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/frontend/report"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/nodejob"
	"github.com/shimkit/shimkit/internal/operator/revision"
	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// reader reads what the operator reads, once.
type reader struct {
	c         client.Client
	cs        kubernetes.Interface // pods' logs
	namespace string
}

// results reads the installers' results of the shim's finished Jobs from
// their pods, as the operator does (one list of the namespace's pods).
func (r reader) results(ctx context.Context, shim string) (func(*batchv1.Job) *plan.NodeResult, error) {
	var pods corev1.PodList
	if err := r.c.List(ctx, &pods, client.InNamespace(r.namespace)); err != nil {
		return nil, fmt.Errorf("list pods in %s: %w", r.namespace, err)
	}
	byJob := map[string][]corev1.Pod{}
	for _, p := range pods.Items {
		if uid := p.Labels[nodejob.LabelControllerUID]; uid != "" {
			byJob[uid] = append(byJob[uid], p)
		}
	}
	return func(j *batchv1.Job) *plan.NodeResult { return nodejob.JobResult(j, byJob[string(j.UID)], shim) }, nil
}

// fleet lists the nodes and the operator's Jobs, and reads the shim's
// results (results).
func (r reader) fleet(ctx context.Context, shim string) ([]*corev1.Node, []*batchv1.Job, func(*batchv1.Job) *plan.NodeResult, error) {
	var nodes corev1.NodeList
	if err := r.c.List(ctx, &nodes); err != nil {
		return nil, nil, nil, fmt.Errorf("list nodes: %w", err)
	}
	var jobs batchv1.JobList
	if err := r.c.List(ctx, &jobs, client.InNamespace(r.namespace), client.MatchingLabels{jobview.LabelManagedBy: jobview.ManagedBy}); err != nil {
		return nil, nil, nil, fmt.Errorf("list Jobs in %s: %w", r.namespace, err)
	}
	ns := make([]*corev1.Node, len(nodes.Items))
	for i := range nodes.Items {
		ns[i] = &nodes.Items[i]
	}
	js := make([]*batchv1.Job, len(jobs.Items))
	for i := range jobs.Items {
		js[i] = &jobs.Items[i]
	}
	results, err := r.results(ctx, shim)
	return ns, js, results, err
}

// liveFleet reads the live Shim, then its fleet (fleet).
func (r reader) liveFleet(ctx context.Context, name string) (*v1alpha1.Shim, []*corev1.Node, []*batchv1.Job, func(*batchv1.Job) *plan.NodeResult, error) {
	shim := &v1alpha1.Shim{}
	if err := r.c.Get(ctx, client.ObjectKey{Name: name}, shim); err != nil {
		return nil, nil, nil, nil, fmt.Errorf("Shim %s: %w", name, err)
	}
	nodes, jobs, results, err := r.fleet(ctx, shim.Name)
	return shim, nodes, jobs, results, err
}

// workloads lists the cluster's pods and PodDisruptionBudgets.
func (r reader) workloads(ctx context.Context) (operator.Workloads, error) {
	var pods corev1.PodList
	if err := r.c.List(ctx, &pods); err != nil {
		return operator.Workloads{}, fmt.Errorf("list pods: %w", err)
	}
	var budgets policyv1.PodDisruptionBudgetList
	if err := r.c.List(ctx, &budgets); err != nil {
		return operator.Workloads{}, fmt.Errorf("list PodDisruptionBudgets: %w", err)
	}
	var wl operator.Workloads
	for i := range pods.Items {
		wl.Pods = append(wl.Pods, &pods.Items[i])
	}
	for i := range budgets.Items {
		wl.Budgets = append(wl.Budgets, &budgets.Items[i])
	}
	return wl, nil
}

// liveShim is the Shim of that name in the cluster (live is the same).
func (r reader) liveShim(ctx context.Context, name string) (shim, live *v1alpha1.Shim, err error) {
	shim = &v1alpha1.Shim{}
	if err := r.c.Get(ctx, client.ObjectKey{Name: name}, shim); err != nil {
		return nil, nil, fmt.Errorf("Shim %s: %w", name, err)
	}
	return shim, shim, nil
}

// admitted is a Shim of a file (source names its document) with the live
// one's identity and status, once the API server admitted it (a dry run);
// live is the Shim in the cluster (nil: none of that name).
func (r reader) admitted(ctx context.Context, shim *v1alpha1.Shim, source string) (_, live *v1alpha1.Shim, err error) {
	switch err := r.c.Patch(ctx, shim.DeepCopy(), client.Apply, client.DryRunAll, client.FieldOwner(fieldOwner), client.ForceOwnership); {
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return nil, nil, fmt.Errorf("%s: the API server refuses it: %w", source, err)
	case err != nil:
		return nil, nil, fmt.Errorf("%s: %w", source, err)
	}
	live = &v1alpha1.Shim{}
	switch err := r.c.Get(ctx, client.ObjectKey{Name: shim.Name}, live); {
	case apierrors.IsNotFound(err):
		// A new Shim: its UID orders the nodes within a wave; the
		// waves' sizes and rules hold.
		return shim, nil, nil
	case err != nil:
		return nil, nil, fmt.Errorf("Shim %s: %w", shim.Name, err)
	}
	shim.UID, shim.Generation, shim.Status = live.UID, live.Generation+1, live.Status
	return shim, live, nil
}

// before is the version a plan changes from: for a file, the live Shim's
// spec and artifact (none for a new Shim); for the live Shim, the
// revision its fleet last had whole (none: its first rollout; the
// current spec: nothing changes).
func (r reader) before(ctx context.Context, live *v1alpha1.Shim, fromFile bool) (report.Version, error) {
	switch {
	case live == nil:
		return report.Version{}, nil
	case fromFile:
		return report.Version{Spec: &live.Spec, Artifact: live.Status.Artifact}, nil
	}
	revs := live.Status.Revisions
	if len(revs) == 0 {
		return report.Version{}, nil
	}
	if revs[0].SpecHash == live.Status.SpecHash {
		return report.Version{Spec: &live.Spec, Artifact: live.Status.Artifact}, nil
	}
	data, err := revision.Load(ctx, r.c, r.namespace, live, revs[0])
	if err != nil {
		return report.Version{}, err
	}
	return report.Version{Spec: &data.Spec, Artifact: data.Artifact}, nil
}
