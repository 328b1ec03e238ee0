package operator

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/nodegate"
	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// InstallJob is the install Job the reconciler would create for the Shim
// on the node (the scale benchmark's floor creates them itself).
func InstallJob(shim *v1alpha1.Shim, node *corev1.Node, opts Options) (*batchv1.Job, error) {
	r, err := New(nil, nil, opts)
	if err != nil {
		return nil, err
	}
	p, err := BuildPlan(shim, node, plan.OpInstall, r.opts)
	if err != nil {
		return nil, err
	}
	return r.starter.buildJob(shim, node, p, nodeview.SpecHash(shim), nodeview.ImageWay(opts.ServerVersion, node))
}

// SetResolveBackoff sets the first wait before a failed resolution is asked
// again (30s in production), so that a test sees its backoff in seconds.
func SetResolveBackoff(o *Options, base time.Duration) { o.resolveBackoff = base }

// withDeps is a Reconciler of the given dependencies and a node gate
// without a cap, for the tests of one role.
func withDeps(d deps) *Reconciler {
	r := &Reconciler{}
	newRoles(r, &d, nodegate.New(0, 0))
	return r
}
