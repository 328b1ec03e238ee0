package decide

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/internal/nodelabel/record"
	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// Taints removes the startup taint from the Shim's nodes that have
// every Shim selecting them.
func Taints(obs *Snapshot) []Action {
	var writes Together
	for i := range obs.Views {
		v := &obs.Views[i]
		if !v.Targeted() || !nodeview.HasPendingTaint(v.Node) || v.Label != record.Installed || v.SpecHash != obs.Hash {
			continue
		}
		if allInstalled(obs, obs.Shims, v.Node) {
			writes = append(writes, Untaint{Node: v.Node, Shim: obs.Shim, Said: Notice{Type: corev1.EventTypeNormal, Reason: "TaintRemoved", Action: "Install", Node: v.Node,
				Note: fmt.Sprintf("node %s has every Shim that selects it: taint %s removed", v.Node.Name, nodeview.PendingTaint)}})
		}
	}
	return []Action{writes}
}

// allInstalled: every Shim (not being deleted) that targets the node has
// it installed at its current spec hash, as that Shim recorded it (a label
// a node pool declared is no install); the reconciled Shim at obs.Hash.
// A Shim refused for another's scheduling label installs no node while
// that one has it: it is not waited for.
func allInstalled(obs *Snapshot, shims []v1alpha1.Shim, node *corev1.Node) bool {
	for i := range shims {
		s := &shims[i]
		if s.UID == obs.Shim.UID || !s.DeletionTimestamp.IsZero() || !nodeview.Matches(s, node) || nodeview.Eligibility(s, node, nodeview.Preinstalled(s, node)) != nil ||
			shimspec.SchedulingRefusal(s, shims) != nil {
			continue
		}
		installed, hash := record.State(node, s.Name)
		if !installed || s.Status.SpecHash == "" || hash != s.Status.SpecHash || record.RecordsOf(node, s.Name, s.UID).Verification == nil {
			return false
		}
	}
	return true
}
