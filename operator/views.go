package operator

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/jobview"
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
func NodeViews(shim *v1alpha1.Shim, nodes []*corev1.Node, jobs []*batchv1.Job, result func(*batchv1.Job) *plan.NodeResult) []decide.NodeView {
	obs := &decide.Snapshot{Shim: shim, Hash: shim.Status.SpecHash}
	decide.BuildViews(obs, decide.NodeReads{Nodes: nodes, Jobs: jobs, Result: finishedResult(result)})
	return obs.Views
}

// finishedResult reads the result of a finished Job (nil result: none).
func finishedResult(result func(*batchv1.Job) *plan.NodeResult) func(*jobview.View) (*plan.NodeResult, bool) {
	if result == nil {
		return nil
	}
	return func(j *jobview.View) (*plan.NodeResult, bool) {
		if j.Running() {
			return nil, false
		}
		return result(j.Object), true
	}
}
