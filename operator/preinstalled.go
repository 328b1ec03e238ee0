package operator

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/fleet"
)

// decideRelabel labels the nodes whose image has the shim as the
// decision says (fleet.Decision.Label, Unlabel): no Job, only the node's
// label, hash and records, each a merge patch. A node labelled counts as
// updated from this reconcile on; one unlabelled as without the shim (the
// views are left so). The decision's lists are emptied.
func decideRelabel(obs *observed, d *fleet.Decision) []action {
	var writes together
	var after []action
	for _, name := range d.Label {
		v := d.ByName[name]
		writes = append(writes, markInstalled{node: v.Node, shim: obs.Shim.Name, uid: obs.Shim.UID, specHash: obs.Hash})
		v.Label, v.SpecHash = nodelabel.Installed, obs.Hash
		after = append(after, note{events: &obs.Events, reason: "Preinstalled", act: "Label", detail: "node " + name + " (its image serves the Shim's handlers)"})
	}
	for _, name := range d.Unlabel {
		v := d.ByName[name]
		writes = append(writes, unmark{node: v.Node.Name, shim: obs.Shim.Name})
		why := "its image no longer serves the Shim"
		if v.Skip != nil {
			why = v.Skip.Detail
		}
		v.Label, v.SpecHash, v.Failure, v.Verified, v.Stale = "", "", nil, nil, nil
		after = append(after, emitEvent{shim: obs.Shim, related: v.Node, eventType: corev1.EventTypeNormal, reason: "Unlabelled", act: "Label", msg: fmt.Sprintf("node %s: %s", name, why)})
	}
	d.Label, d.Unlabel = nil, nil
	return append([]action{writes}, after...)
}
