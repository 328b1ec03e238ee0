package operator

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/internal/operator/workload"
)

// checkGate reads the workload failures of the Shim's RuntimeClasses on
// the nodes that have the target, since the rollout started, and judges
// them (decide.JudgeGate: obs.Tripped). A read that fails leaves the gate
// unjudged: no bake ends, and the gate looks again soon.
func (r *gateCheck) checkGate(ctx context.Context, obs *observed) error {
	if !obs.GateWatches() {
		return nil
	}
	updated := decide.UpdatedNodes(obs)
	if len(updated) == 0 {
		return nil
	}
	var classes []string
	for _, c := range shimspec.Classes(obs.Shim) {
		classes = append(classes, c.Name)
	}
	fs, err := workload.Failures(ctx, r.client, classes, updated, decide.GateSince(obs, obs.RolloutNow))
	if err != nil {
		// Not judged yet (the workloads' informers are still filling, or
		// RBAC is missing).
		log.FromContext(ctx).Info("health gate: workloads not judged", "shim", obs.Shim.Name, "error", err.Error())
		obs.Unjudged = true
		return nil
	}
	obs.Tripped = decide.JudgeGate(obs, fs)
	return nil
}
