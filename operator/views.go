package operator

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/fleet"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// NodeViews is how the Shim sees each node, read as a reconcile reads it:
// whether it matches and can run the shim (and if not, why it is
// skipped), its label, hash and records, and the newest install or
// uninstall Job and the newest verifying Job the Shim has there, with the
// installer's result of a finished one (result: read from the Job's pods,
// as a reconcile reads it, nodejob.JobResult; nil: the Job's conditions
// alone). It calls no API server and writes nothing: tools (kubectl
// shimkit) show the fleet as the operator sees it.
func NodeViews(shim *v1alpha1.Shim, nodes []*corev1.Node, jobs []*batchv1.Job, result func(*batchv1.Job) *plan.NodeResult) []fleet.NodeView {
	latest, verifying := decide.NewestJobs(shim, jobs, func(*v1alpha1.Shim, types.UID) bool { return false })
	canary := nodeview.CanaryHash(shim)
	views := make([]fleet.NodeView, 0, len(nodes))
	for _, n := range nodes {
		v := nodeview.View(shim, n, canary)
		for _, j := range attachJobs(&v, latest, verifying) {
			if result != nil && !j.Running() {
				j.Result, j.ResultRead = result(j.Object), true
			}
		}
		if why, ok := nodeview.ReadOnlyHost(&v, shim.Status.SpecHash); ok && v.Matching && v.Skip == nil {
			v.Skip = &fleet.Skip{Reason: v1alpha1.SkipReadOnlyHost, Detail: why}
		}
		views = append(views, v)
	}
	return views
}

// attachJobs gives the node's view its newest Jobs (install or uninstall,
// and verifying) when they tell of the node's machine now, and returns
// those it attached.
func attachJobs(v *fleet.NodeView, latest, verifying map[string]*jobview.View) []*jobview.View {
	var out []*jobview.View
	if j := latest[v.Node.Name]; j != nil && nodeview.ForMachine(v, j) {
		v.Job = j
		out = append(out, j)
	}
	if j := verifying[v.Node.Name]; j != nil && nodeview.ForMachine(v, j) {
		v.Verify = j
		out = append(out, j)
	}
	return out
}
