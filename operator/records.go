package operator

import (
	"context"

	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/nodelabel/record"
	corev1 "k8s.io/api/core/v1"
)

// What a Shim leaves on a node (its label, the hash annotation, its failure
// and verification records) belongs to that Shim object: the records name
// its UID (nodelabel.RecordsOf). A Shim deleted and created again under
// the same name is another object, and starts clean:
//   - records another object of the name left (one whose nodes were not
//     cleaned: its finalizer removed by hand) are not read, and dropped
//     (dropStaleRecords); a node labelled by it is installed again;
//   - a deleted Shim removes, after its uninstalls, every record it left
//     on nodes it never installed (a refused install's failure, say:
//     forgetNodes), before its finalizer goes.

// dropStaleRecords removes from the nodes the failure and verification
// records of another Shim object of the same name, one patch per node
// that has any (none on a fleet that never saw a predecessor).
func (r *Reconciler) dropStaleRecords(ctx context.Context, obs *observed) error {
	g := r.group(ctx)
	for i := range obs.views {
		v := &obs.views[i]
		switch {
		case v.Reimaged:
			// A new machine under the node's name: the old one's label (no
			// new pod lands there), hash and records go in one patch.
			r.event(obs.shim, v.Node, corev1.EventTypeWarning, "Reimaged", "Install", "node %s is another machine now (%s): it loses the shim's label and is installed again", v.Node.Name, record.Machine(v.Node))
			g.Go(func() error { return nodelabel.Unmark(ctx, r.client, v.Node.Name, obs.shim.Name) })
		case len(v.Stale) > 0:
			g.Go(func() error { return nodelabel.DropRecords(ctx, r.client, v.Node.Name, v.Stale...) })
		}
	}
	return g.Wait()
}

// forgetNodes removes everything of the deleted Shim from the nodes that
// still carry some of it once every node is uninstalled: the failure of a
// node whose install was refused (it was never labelled, so it had nothing
// to uninstall), a verification, a stale record.
func (r *Reconciler) forgetNodes(ctx context.Context, obs *observed) error {
	g := r.group(ctx)
	for i := range obs.views {
		v := &obs.views[i]
		if !v.HasRecords() {
			continue
		}
		g.Go(func() error { return nodelabel.Unmark(ctx, r.client, v.Node.Name, obs.shim.Name) })
	}
	return g.Wait()
}
