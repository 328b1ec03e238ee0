package operator

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// PendingTaint is the startup taint a node pool may put on joining nodes
// (effect NoSchedule) so that no workload lands before its runtimes: the
// operator removes it once every Shim that selects the node is installed
// there at that Shim's current spec. Installer Jobs tolerate it.
const PendingTaint = "shim.containerd.x-k8s.io/pending"

func hasPendingTaint(node *corev1.Node) bool {
	return slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == PendingTaint })
}

// releaseTaints removes the startup taint from the Shim's nodes that have
// every Shim selecting them.
func (r *Reconciler) releaseTaints(ctx context.Context, obs *observed) error {
	shims := v1alpha1.ShimList{Items: obs.shims}
	for i := range obs.views {
		v := &obs.views[i]
		if !v.Targeted() || !hasPendingTaint(v.Node) || v.Label != nodelabel.Installed || v.SpecHash != obs.hash {
			continue
		}
		if !allInstalled(obs, shims.Items, v.Node) {
			continue
		}
		node := v.Node.DeepCopy()
		node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == PendingTaint })
		// A patch with the resourceVersion read: a taint list changed
		// meanwhile is read again on the next reconcile, not overwritten.
		patch := client.MergeFromWithOptions(v.Node, client.MergeFromWithOptimisticLock{})
		if err := r.client.Patch(ctx, node, patch); err != nil {
			if apierrors.IsConflict(err) {
				continue
			}
			return fmt.Errorf("remove taint %s from node %s: %w", PendingTaint, node.Name, err)
		}
		r.event(obs.shim, node, corev1.EventTypeNormal, "TaintRemoved", "Install", "node %s has every Shim that selects it: taint %s removed", node.Name, PendingTaint)
	}
	return nil
}

// allInstalled: every Shim (not being deleted) that targets the node has
// it installed at its current spec hash; the reconciled Shim at obs.hash.
func allInstalled(obs *observed, shims []v1alpha1.Shim, node *corev1.Node) bool {
	for i := range shims {
		s := &shims[i]
		if s.UID == obs.shim.UID || !s.DeletionTimestamp.IsZero() || !matches(s, node) || eligibility(s, node, preinstalled(s, node)) != nil {
			continue
		}
		installed, hash := nodelabel.State(node, s.Name)
		if !installed || s.Status.SpecHash == "" || hash != s.Status.SpecHash {
			return false
		}
	}
	return true
}
