package operator

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shimkit/shimkit/internal/nodelabel/record"
	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/internal/operator/workload"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// readGate reads, while the health gate watches, the workload failures
// of the Shim's RuntimeClasses since the rollout started on the targeted
// nodes that have the target or whose Job of it succeeded, into the
// snapshot (obs.GateFailures); the decision judges those of the nodes
// that have the target once the records are made (decide.Delivery,
// JudgeGate). A read that fails leaves the gate unjudged: no bake ends,
// and the gate looks again soon.
func (r *gateCheck) readGate(ctx context.Context, obs *observed) error {
	if !obs.Shim.DeletionTimestamp.IsZero() || !obs.GateWatches() {
		return nil
	}
	targeted := map[string]bool{}
	for i := range obs.Views {
		v := &obs.Views[i]
		has := v.Label == record.Installed && v.SpecHash == obs.Hash
		done := v.Job != nil && v.Job.SpecHash == obs.Hash && v.Job.Succeeded()
		if v.Targeted() && (has || done) {
			targeted[v.Node.Name] = true
		}
	}
	if len(targeted) == 0 {
		return nil
	}
	var classes []string
	for _, c := range shimspec.Classes(obs.Shim) {
		classes = append(classes, c.Name)
	}
	fs, err := workload.Failures(ctx, r.client, classes, targeted, decide.GateSince(obs, obs.RolloutNow))
	if err != nil {
		// Not judged yet (the workloads' informers are still filling, or
		// RBAC is missing).
		log.FromContext(ctx).Info("health gate: workloads not judged", "shim", obs.Shim.Name, "error", err.Error())
		obs.Unjudged = true
		return nil
	}
	obs.GateRead, obs.GateFailures = true, fs
	return nil
}

// readPods reads, when the reconcile may remove the shim from a node
// (the Shim is deleted, or a node that has it is no longer targeted), the
// pods of the Shim's RuntimeClasses that still run on each node
// (obs.Pods): a node's removal waits for them. A read that fails fails
// the reconcile: no handler goes while it is unknown who uses it.
func (r *gateCheck) readPods(ctx context.Context, obs *observed) error {
	removing := !obs.Shim.DeletionTimestamp.IsZero()
	for i := range obs.Views {
		v := &obs.Views[i]
		removing = removing || v.Touched() && !v.Targeted() && !v.Preinstalled
	}
	if err := r.readDrains(ctx, obs); err != nil {
		return err
	}
	if !removing {
		return nil
	}
	var classes []string
	for _, c := range shimspec.Classes(obs.Shim) {
		classes = append(classes, c.Name)
	}
	pods, err := workload.PodsOn(ctx, r.client, classes)
	if err != nil {
		return fmt.Errorf("shim %s: the pods its removal waits for: %w", obs.Shim.Name, err)
	}
	obs.Pods = pods
	return nil
}

// readDrains reads, for a Shim that drains nodes before it changes them
// (rolloutStrategy.disruption Drain), the pods of each node it has
// cordoned, and the PodDisruptionBudgets (obs.NodePods, obs.Budgets).
func (r *gateCheck) readDrains(ctx context.Context, obs *observed) error {
	obs.OperatorNamespace = r.opts.Namespace
	rs := obs.Shim.Spec.RolloutStrategy
	if rs == nil || rs.Disruption == nil || rs.Disruption.Policy != v1alpha1.DisruptDrain {
		return nil
	}
	for i := range obs.Views {
		v := &obs.Views[i]
		if _, ok := record.DisruptedBy(v.Node, obs.Shim.Name); !ok {
			continue
		}
		pods, err := workload.PodsOfNode(ctx, r.client, v.Node.Name)
		if err != nil {
			return fmt.Errorf("shim %s: draining node %s: %w", obs.Shim.Name, v.Node.Name, err)
		}
		if obs.NodePods == nil {
			obs.NodePods = map[string][]*corev1.Pod{}
		}
		obs.NodePods[v.Node.Name] = pods
	}
	if obs.NodePods == nil {
		return nil
	}
	budgets, err := workload.Budgets(ctx, r.client)
	if err != nil {
		return fmt.Errorf("shim %s: %w", obs.Shim.Name, err)
	}
	obs.Budgets = budgets
	return nil
}
