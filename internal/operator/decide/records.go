package decide

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/internal/nodelabel/record"
)

// What a Shim leaves on a node (its label, the hash annotation, its failure
// and verification records) belongs to that Shim object: the records name
// its UID (record.RecordsOf). A Shim deleted and created again under
// the same name is another object, and starts clean:
//   - records another object of the name left (one whose nodes were not
//     cleaned: its finalizer removed by hand) are not read, and dropped
//     (StaleRecords); a node labelled by it is installed again;
//   - a deleted Shim removes, after its uninstalls, every record it left
//     on nodes it never installed (a refused install's failure, say:
//     Forget), before its finalizer goes.

// Records decides, before the rollout, what the snapshot's finished
// and stuck Jobs and a new retry request change: the retry first (it
// clears failures), then the stuck pulls, then the finished Jobs' records.
// It returns, with the actions, the snapshot as they leave the nodes (a
// Copy: obs is not changed), which the rest of the plan is made on.
func Records(obs *Snapshot) (*Snapshot, []Action, error) {
	w := obs.Copy()
	acts := Retry(w)
	pulls, err := StuckPulls(w)
	if err != nil {
		return nil, nil, err
	}
	return w, slices.Concat(acts, pulls, Finished(w)), nil
}

// StaleRecords removes from the nodes the failure and verification
// records of another Shim object of the same name, one patch per node
// that has any (none on a fleet that never saw a predecessor), and a
// reimaged node's label.
func StaleRecords(obs *Snapshot) []Action {
	var events []Action
	var writes Together
	for i := range obs.Views {
		v := &obs.Views[i]
		switch {
		case v.Reimaged:
			// A new machine under the node's name: the old one's label (no
			// new pod lands there), hash and records go in one patch.
			events = append(events, Notice{Node: v.Node, Type: corev1.EventTypeWarning, Reason: "Reimaged", Action: "Install",
				Note: fmt.Sprintf("node %s is another machine now (%s): it loses the shim's label and is installed again", v.Node.Name, record.Machine(v.Node))})
			writes = append(writes, Unmark{Node: v.Node.Name, Shim: obs.Shim.Name, Scheduling: obs.Shim.Spec.SchedulingLabel})
		case len(v.Stale) > 0:
			writes = append(writes, DropRecords{Node: v.Node.Name, Keys: v.Stale})
		}
	}
	return append(events, writes)
}

// Forget removes everything of the deleted Shim from the nodes that
// still carry some of it once every node is uninstalled: the failure of a
// node whose install was refused (it was never labelled, so it had nothing
// to uninstall), a verification, a stale record.
func Forget(obs *Snapshot) []Action {
	var writes Together
	for i := range obs.Views {
		if v := &obs.Views[i]; v.HasRecords() {
			writes = append(writes, Unmark{Node: v.Node.Name, Shim: obs.Shim.Name, Scheduling: obs.Shim.Spec.SchedulingLabel})
		}
	}
	return []Action{writes}
}
