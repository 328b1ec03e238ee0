package status

import (
	"context"

	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/fleet"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

// Delivery tells where the decision left the rollout (obs.Rollout, as
// decide.PlanInstall recorded it): a tripped gate and a revert each with a
// Warning Event, once, and the rollout's step in the metrics.
func (r *Reporter) Delivery(ctx context.Context, obs *decide.Snapshot, dec fleet.Decision) {
	d := dec.Delivered
	old := shimspec.RolloutOf(obs.Shim, obs.Hash)
	name := obs.Shim.Name
	if d.Tripped {
		r.metrics.GateTripped(name, d.Halt.Reason)
		r.event(ctx, obs.Shim, nil, corev1.EventTypeWarning, d.Halt.Reason, "Rollout", "the rollout halts: %s", d.Halt.Message)
	}
	if d.Revert && obs.Reverted == "" && (old == nil || old.RevertedTo == "") {
		r.event(ctx, obs.Shim, nil, corev1.EventTypeWarning, v1alpha1.ReasonReverting, "Rollout", "the rollout of %s failed (%s): the nodes updated go back to revision %s", obs.Hash, fleet.RevertCause(nil, decide.HaltTrip(obs.Rollout.Halt)), obs.Rollout.RevertedTo)
	}
	step := -1
	if len(obs.Steps) > 0 && obs.Reverted == "" && d.Stage.Step < len(obs.Steps) {
		step = d.Stage.Step
	}
	r.metrics.RolloutStep(name, step)
	r.metrics.RolloutPaused(name, d.Hold == fleet.HoldPaused)
}

// Decision emits the decision's Warnings: one per node no plan
// could be built for, and the refusal's one (pin emits none for it), when
// the status does not show it yet.
func (r *Reporter) Decision(ctx context.Context, obs *decide.Snapshot, d fleet.Decision) {
	for _, v := range d.Unplanned {
		r.event(ctx, obs.Shim, v.Node, corev1.EventTypeWarning, "InstallFailed", "Install", "%s", decide.FailureNote(v.Node.Name, string(decide.PlanReason(v.PlanErr)), v.PlanErr.Error()))
	}
	if obs.Refusal != nil && !obs.Refusal.Shown(obs.Shim) {
		r.event(ctx, obs.Shim, nil, corev1.EventTypeWarning, obs.Refusal.Reason, "Install", "%s", obs.Refusal.Message)
	}
}
