package operator

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/operator/decide"
	"github.com/shimkit/shimkit/operator/fleet"
	"github.com/shimkit/shimkit/operator/shimspec"
	"github.com/shimkit/shimkit/operator/workload"
	"github.com/shimkit/shimkit/rollout"
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

// reportDelivery records where the decision left the rollout (for the
// status), and tells of a tripped gate and of a revert with a Warning
// Event each, once.
func (r *reporter) reportDelivery(obs *observed, dec fleet.Decision) {
	d := dec.Delivered
	obs.Delivered = d
	old := shimspec.RolloutOf(obs.Shim, obs.Hash)
	obs.Rollout = decide.RecordRollout(obs, d, decide.FailedNodes(obs, dec.Rollin, rollout.Plan{}))
	name := obs.Shim.Name
	if d.Tripped {
		r.metrics.GateTripped(name, d.Halt.Reason)
		r.event(obs.Shim, nil, corev1.EventTypeWarning, d.Halt.Reason, "Rollout", "the rollout halts: %s", d.Halt.Message)
	}
	if d.Revert && obs.Reverted == "" && (old == nil || old.RevertedTo == "") {
		r.event(obs.Shim, nil, corev1.EventTypeWarning, v1alpha1.ReasonReverting, "Rollout", "the rollout of %s failed (%s): the nodes updated go back to revision %s", obs.Hash, fleet.RevertCause(nil, decide.HaltTrip(obs.Rollout.Halt)), obs.Rollout.RevertedTo)
	}
	step := -1
	if len(obs.Steps) > 0 && obs.Reverted == "" && d.Stage.Step < len(obs.Steps) {
		step = d.Stage.Step
	}
	r.metrics.RolloutStep(name, step)
	r.metrics.RolloutPaused(name, d.Hold == fleet.HoldPaused)
}
