package operator

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/operator/decide"
	"github.com/shimkit/shimkit/operator/nodeview"
)

// PendingTaint is the startup taint a node pool may put on joining nodes
// (effect NoSchedule) so that no workload lands before its runtimes: the
// operator removes it once every Shim that selects the node is installed
// there at that Shim's current spec. Installer Jobs tolerate it.
const PendingTaint = nodeview.PendingTaint

// decideTaints removes the startup taint from the Shim's nodes that have
// every Shim selecting them.
func decideTaints(obs *observed) []decide.Action {
	var writes decide.Together
	for i := range obs.Views {
		v := &obs.Views[i]
		if !v.Targeted() || !nodeview.HasPendingTaint(v.Node) || v.Label != nodelabel.Installed || v.SpecHash != obs.Hash {
			continue
		}
		if allInstalled(obs, obs.Shims, v.Node) {
			writes = append(writes, decide.Untaint{Node: v.Node, Shim: obs.Shim})
		}
	}
	return []decide.Action{writes}
}

// allInstalled: every Shim (not being deleted) that targets the node has
// it installed at its current spec hash; the reconciled Shim at obs.Hash.
func allInstalled(obs *observed, shims []v1alpha1.Shim, node *corev1.Node) bool {
	for i := range shims {
		s := &shims[i]
		if s.UID == obs.Shim.UID || !s.DeletionTimestamp.IsZero() || !nodeview.Matches(s, node) || nodeview.Eligibility(s, node, nodeview.Preinstalled(s, node)) != nil {
			continue
		}
		installed, hash := nodelabel.State(node, s.Name)
		if !installed || s.Status.SpecHash == "" || hash != s.Status.SpecHash {
			return false
		}
	}
	return true
}
