package decide

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/nodelabel/record"
	"github.com/shimkit/shimkit/rollout"
)

// Policy is what Decide needs beside the snapshot.
type Policy struct {
	// Planner plans under the Shim's strategy (maxUpdate, Recreate).
	Planner rollout.Planner
	// Shared are the nodes that other Shims would install now: they
	// come first, so that one Job carries all their plans.
	Shared map[string]bool
	// PlanFor builds a node's install plan for the target; an error
	// fails the node without a Job (as a failed Job would).
	PlanFor func(node *corev1.Node) (*plan.NodePlan, error)
	// Delivery are the progressive-delivery rules (pause, windows, steps,
	// the health gate's verdict, the failure policy) and the time.
	Delivery DeliveryRules
}

// Decision is what a reconcile decides for a Shim's nodes from its
// snapshot alone: which nodes start installing or uninstalling now, and
// where the rollout and the removal stand. The caller carries it out.
type Decision struct {
	// Rollin plans the targeted nodes towards the current spec; Removal
	// the nodes no longer targeted that have the shim towards none.
	Rollin, Removal rollout.Plan
	// ByName are the views of the Shim's nodes, by node name (they point
	// into the snapshot's Views).
	ByName map[string]*NodeView
	// Unplanned are the targeted nodes that need an install but for which
	// no plan could be built (their PlanErr): failed without a Job.
	Unplanned []*NodeView
	// Delivered is where the progressive-delivery rules leave the
	// rollout (Policy.Delivery).
	Delivered Delivered
	// Label are the preinstalled nodes targeted that are to be labelled
	// at the target (their kubelet reports every handler); Unlabel the
	// preinstalled nodes labelled that no longer are targeted (a handler
	// not reported, out of the selector, the Shim deleted). No Job runs
	// for either.
	Label, Unlabel []string
}

// Decide decides the rollout, without a client, a context or the clock,
// from what the snapshot says of it: the target (Hash), whether the spec
// is refused (Refusal) and the node views (Views, which it fills in). The
// targeted nodes that lack the current spec get their install plan
// (NodeView.Plan, or PlanErr, which fails the node as a failed Job
// would); the targeted nodes are planned towards the current spec under
// the Shim's strategy, those in p.Shared first; the nodes that stopped
// being targeted and have the shim are planned towards none. A refused
// spec starts no install; removals go on. Then the progressive-delivery
// rules apply (Policy.Delivery): a halt, steps, a pause and maintenance
// windows hold starts back (nodes that may start outside a window come
// first).
func Decide(s *Snapshot, p Policy) (Decision, error) {
	d := Decision{ByName: make(map[string]*NodeView, len(s.Views))}
	refused := s.Refusal != nil
	open, next := p.Delivery.Windows.Open(p.Delivery.Now)
	var targeted, stale []rollout.Node
	for i := range s.Views {
		v := &s.Views[i]
		d.ByName[v.Node.Name] = v
		switch {
		case v.Preinstalled:
			d.relabel(v, s.Hash, refused, false)
		case v.Targeted():
			if !refused && v.NeedsInstall(s.Hash) {
				v.Plan, v.PlanErr = p.PlanFor(v.Node)
				if v.PlanErr != nil {
					d.Unplanned = append(d.Unplanned, v)
				}
			}
			n := v.PlannerNode(s.Hash, false)
			n.Retried = s.retriedNode(v.Node.Name)
			s.Hold(v, &n, false)
			if p.Shared[n.Name] {
				n.Priority = 1
			}
			if !open && !v.waitsForWindow() {
				n.Priority += 2
			}
			targeted = append(targeted, n)
		case v.Touched():
			n := v.PlannerNode(s.Hash, true)
			s.Hold(v, &n, true)
			if !open && !v.waitsForWindow() {
				n.Priority += 2
			}
			stale = append(stale, n)
		}
	}
	var err error
	if d.Rollin, err = p.Planner.Install(targeted); err != nil {
		return Decision{}, err
	}
	if refused {
		d.Rollin.Start = nil
	}
	if d.Removal, err = p.Planner.Remove(stale); err != nil {
		return Decision{}, err
	}
	if err := d.deliver(s, p.Delivery, open, next); err != nil {
		return Decision{}, err
	}
	return d, nil
}

// DecideRemoval decides for a deleted Shim, from the snapshot's target
// and node views: every node that has the shim (or a Job changing it) is
// planned towards none, under the same strategy (install Jobs still
// running finish first). A pause and the maintenance windows hold
// uninstalls back as they hold installs.
func DecideRemoval(s *Snapshot, p rollout.Planner, dl DeliveryRules) (Decision, error) {
	d := Decision{ByName: make(map[string]*NodeView, len(s.Views)), Rollin: rollout.Plan{Done: true}}
	open, next := dl.Windows.Open(dl.Now)
	var targets []rollout.Node
	for i := range s.Views {
		v := &s.Views[i]
		d.ByName[v.Node.Name] = v
		if v.Preinstalled {
			d.relabel(v, s.Hash, false, true)
			continue
		}
		if v.Touched() {
			n := v.PlannerNode(s.Hash, true)
			s.Hold(v, &n, true)
			if !open && !v.waitsForWindow() {
				n.Priority += 2
			}
			targets = append(targets, n)
		}
	}
	var err error
	if d.Removal, err = p.Remove(targets); err != nil {
		return Decision{}, err
	}
	removal := DeliveryRules{Now: dl.Now, Paused: dl.Paused, Windows: dl.Windows}
	if err := d.deliver(s, removal, open, next); err != nil {
		return Decision{}, err
	}
	return d, nil
}

// Done: every targeted node has the current spec and no other node has
// the shim.
func (d Decision) Done() bool {
	return d.Rollin.Done && d.Removal.Done && len(d.Label) == 0 && len(d.Unlabel) == 0
}

// relabel decides a preinstalled node's label: at the target while it is
// targeted (as it was while the spec is refused), none once it is not, or
// the Shim is removed.
func (d *Decision) relabel(v *NodeView, target string, refused, removing bool) {
	switch {
	case removing || !v.Targeted():
		if v.HasRecords() {
			d.Unlabel = append(d.Unlabel, v.Node.Name)
		}
	case refused:
	case v.Label != record.Installed || v.SpecHash != target:
		d.Label = append(d.Label, v.Node.Name)
	}
}
