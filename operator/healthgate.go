package operator

import (
	"cmp"
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/operator/fleet"
	"github.com/shimkit/shimkit/operator/health"
	"github.com/shimkit/shimkit/operator/shimspec"
	"github.com/shimkit/shimkit/operator/workload"
	"github.com/shimkit/shimkit/rollout"
)

// checkGate reads the workload failures of the Shim's RuntimeClasses on
// the nodes that have the target, since the rollout started, and judges
// them (judgeGate: obs.Tripped). A read that fails leaves the gate
// unjudged: no bake ends, and the gate looks again soon.
func (r *gateCheck) checkGate(ctx context.Context, obs *observed) error {
	if !obs.GateWatches() {
		return nil
	}
	updated := updatedNodes(obs)
	if len(updated) == 0 {
		return nil
	}
	var classes []string
	for _, c := range shimspec.Classes(obs.Shim) {
		classes = append(classes, c.Name)
	}
	fs, err := workload.Failures(ctx, r.client, classes, updated, gateSince(obs, r.opts.Clock.Now()))
	if err != nil {
		// Not judged yet (the workloads' informers are still filling, or
		// RBAC is missing).
		log.FromContext(ctx).Info("health gate: workloads not judged", "shim", obs.Shim.Name, "error", err.Error())
		obs.Unjudged = true
		return nil
	}
	obs.Tripped = judgeGate(obs, fs)
	return nil
}

// updatedNodes are the targeted nodes that have the target.
func updatedNodes(obs *observed) map[string]bool {
	updated := map[string]bool{}
	for i := range obs.Views {
		if v := &obs.Views[i]; v.Targeted() && v.Label == nodelabel.Installed && v.SpecHash == obs.Hash {
			updated[v.Node.Name] = true
		}
	}
	return updated
}

// gateSince is when the workloads' failures start to count: the start of
// the target's rollout, or now for a rollout not started or just retried.
func gateSince(obs *observed, now time.Time) time.Time {
	if st := shimspec.RolloutOf(obs.Shim, obs.Hash); st != nil && !obs.RetriedNow {
		return st.StartedAt.Time
	}
	return now
}

// judgeGate is the health gate's verdict on the workload failures of the
// updated nodes and their lost handlers, under the Shim's thresholds: the
// trip, or nil.
func judgeGate(obs *observed, workloads []health.Failure) *fleet.Trip {
	limits, _ := shimspec.Gate(obs.Shim)
	fs := append(slices.Clone(workloads), lostHandlers(obs, updatedNodes(obs))...)
	slices.SortStableFunc(fs, func(a, b health.Failure) int { return cmp.Compare(a.Node, b.Node) })
	if v := limits.Check(fs); v.Tripped {
		return &fleet.Trip{Reason: v1alpha1.ReasonWorkloadFailures, Message: v.Message}
	}
	return nil
}

// lostHandlers are the updated nodes whose kubelet no longer reports one
// of the Shim's handlers (past the grace after their installer: drift),
// each a failure of its own.
func lostHandlers(obs *observed, updated map[string]bool) []health.Failure {
	var fs []health.Failure
	handlers := fleet.HandlerNames(obs.Shim)
	for i := range obs.Views {
		v := &obs.Views[i]
		if !updated[v.Node.Name] || v.Drifted == "" {
			continue
		}
		if h := fleet.MissingHandler(v.Node, handlers); h != "" {
			fs = append(fs, health.Failure{Node: v.Node.Name, Reason: health.ReasonHandlerMissing, Message: "handler " + h + " is not served"})
		}
	}
	return fs
}

// reportDelivery records where the decision left the rollout (for the
// status), and tells of a tripped gate and of a revert with a Warning
// Event each, once.
func (r *reporter) reportDelivery(obs *observed, dec fleet.Decision) {
	d := dec.Delivered
	obs.Delivered = d
	old := shimspec.RolloutOf(obs.Shim, obs.Hash)
	obs.Rollout = r.recordRollout(obs, d, failedNodes(obs, dec.Rollin, rollout.Plan{}))
	name := obs.Shim.Name
	if d.Tripped {
		r.metrics.GateTripped(name, d.Halt.Reason)
		r.event(obs.Shim, nil, corev1.EventTypeWarning, d.Halt.Reason, "Rollout", "the rollout halts: %s", d.Halt.Message)
	}
	if d.Revert && obs.Reverted == "" && (old == nil || old.RevertedTo == "") {
		r.event(obs.Shim, nil, corev1.EventTypeWarning, v1alpha1.ReasonReverting, "Rollout", "the rollout of %s failed (%s): the nodes updated go back to revision %s", obs.Hash, fleet.RevertCause(nil, haltTrip(obs.Rollout.Halt)), obs.Rollout.RevertedTo)
	}
	step := -1
	if len(obs.Steps) > 0 && obs.Reverted == "" && d.Stage.Step < len(obs.Steps) {
		step = d.Stage.Step
	}
	r.metrics.RolloutStep(name, step)
	r.metrics.RolloutPaused(name, d.Hold == fleet.HoldPaused)
}

// deliveryRequeue is when a rollout is looked at again (after: when it
// would be otherwise; 0: not by time): at once to start a revert; when a
// bake ends, a window opens, or the gate looks at the workloads again.
func (r *Reconciler) deliveryRequeue(obs *observed, d fleet.Decision, after time.Duration) time.Duration {
	dl := d.Delivered
	if dl.Revert && obs.Reverted == "" {
		return time.Second
	}
	now := r.opts.Clock.Now()
	sooner := func(at time.Time) {
		if w := max(at.Sub(now), time.Second); !at.IsZero() && (after == 0 || w < after) {
			after = w
		}
	}
	switch dl.Hold {
	case fleet.HoldBaking:
		sooner(dl.Stage.BakeUntil)
	case fleet.HoldWindow:
		sooner(dl.NextWindow)
	}
	if !dl.NextWindow.IsZero() {
		sooner(dl.NextWindow)
	}
	if obs.GateWatches() && dl.Halt == nil {
		sooner(now.Add(r.opts.GatePeriod))
	}
	return after
}
