package decide

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/internal/nodelabel/record"
)

// Relabel labels the nodes whose image has the shim as the
// decision says (Decision.Label, Unlabel): no Job, only the node's
// label, hash and records, each a merge patch. A node labelled counts as
// updated from this reconcile on; one unlabelled as without the shim (the
// views are left so). The decision's lists are emptied.
func Relabel(obs *Snapshot, d *Decision) []Action {
	var writes Together
	var after []Action
	for _, name := range d.Label {
		v := d.ByName[name]
		writes = append(writes, MarkInstalled{Node: v.Node, Shim: obs.Shim.Name, UID: obs.Shim.UID, SpecHash: obs.Hash, Scheduling: obs.Shim.Spec.SchedulingLabel})
		v.Label, v.SpecHash = record.Installed, obs.Hash
		after = append(after, Note{Reason: "Preinstalled", Action: "Label", Detail: "node " + name + " (its image serves the Shim's handlers)"})
	}
	for _, name := range d.Unlabel {
		v := d.ByName[name]
		writes = append(writes, Unmark{Node: v.Node.Name, Shim: obs.Shim.Name, Scheduling: obs.Shim.Spec.SchedulingLabel})
		why := "its image no longer serves the Shim"
		if v.Skip != nil {
			why = v.Skip.Detail
		}
		v.Label, v.SpecHash, v.Failure, v.Verified, v.Stale = "", "", nil, nil, nil
		after = append(after, Notice{Node: v.Node, Type: corev1.EventTypeNormal, Reason: "Unlabelled", Action: "Label", Note: fmt.Sprintf("node %s: %s", name, why)})
	}
	d.Label, d.Unlabel = nil, nil
	return append([]Action{writes}, after...)
}
