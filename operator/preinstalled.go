package operator

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/fleet"
)

// relabel carries out the decision's labels of the nodes whose image has
// the shim (fleet.Decision.Label, Unlabel): no Job, only the node's
// label, hash and records, each a merge patch. A node labelled counts as
// updated from this reconcile on; one unlabelled as without the shim. The
// decision's lists are emptied once done.
func (r *Reconciler) relabel(ctx context.Context, obs *observed, d *fleet.Decision) error {
	g := r.group(ctx)
	for _, name := range d.Label {
		v := d.ByName[name]
		g.Go(func() error {
			if err := nodelabel.MarkOn(ctx, r.client, v.Node, obs.shim.Name, obs.shim.UID, obs.hash); err != nil {
				return err
			}
			v.Label, v.SpecHash = nodelabel.Installed, obs.hash
			return nil
		})
	}
	for _, name := range d.Unlabel {
		v := d.ByName[name]
		g.Go(func() error {
			if err := nodelabel.Unmark(ctx, r.client, v.Node.Name, obs.shim.Name); err != nil {
				return err
			}
			v.Label, v.SpecHash, v.Failure, v.Verified, v.Stale = "", "", nil, nil, nil
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for _, name := range d.Label {
		obs.events.add("Preinstalled", "Label", "node "+name+" (its image serves the Shim's handlers)")
	}
	for _, name := range d.Unlabel {
		v := d.ByName[name]
		note := "its image no longer serves the Shim"
		if v.Skip != nil {
			note = v.Skip.Detail
		}
		r.event(obs.shim, v.Node, corev1.EventTypeNormal, "Unlabelled", "Label", "node %s: %s", name, note)
	}
	d.Label, d.Unlabel = nil, nil
	return nil
}
