package operator

import (
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/rollout"
)

// rolloutDecision is what a reconcile decides for a Shim's nodes from its
// snapshot alone (decideRollout): which nodes start installing or
// uninstalling now, and where the rollout and the removal stand. The
// reconcile then carries it out (install), each write a step of its own.
type rolloutDecision struct {
	// rollin plans the targeted nodes towards the current spec; removal
	// the nodes no longer targeted that have the shim towards none.
	rollin, removal rollout.Plan
	// byName are the views of the Shim's nodes, by node name.
	byName map[string]*nodeView
	// unplanned are the targeted nodes that need an install but for which
	// no plan could be built (their planErr): failed without a Job.
	unplanned []*nodeView
}

// decideRollout decides, without a client, a context or the clock: the
// targeted nodes that lack the current spec get their install plan
// (nodeView.plan, or planErr, which fails the node as a failed Job would);
// the targeted nodes are planned towards the current spec under the
// Shim's strategy, those in shared first (nodes other Shims would install
// now, so that one Job carries them all); the nodes that stopped being
// targeted and have the shim are planned towards none. A refused spec
// starts no install; removals go on.
func decideRollout(obs *observed, p rollout.Planner, o Options, shared map[string]bool) (rolloutDecision, error) {
	d := rolloutDecision{byName: make(map[string]*nodeView, len(obs.views))}
	var targeted, stale []rollout.Node
	for i := range obs.views {
		v := &obs.views[i]
		d.byName[v.node.Name] = v
		switch {
		case v.targeted():
			if obs.refusal == nil && v.needsInstall(obs.hash) {
				v.plan, v.planErr = buildPlan(obs.shim, v.node, plan.OpInstall, o, obs.target())
				if v.planErr != nil {
					d.unplanned = append(d.unplanned, v)
				}
			}
			n := v.plannerNode(obs.hash, false)
			if shared[n.Name] {
				n.Priority = 1
			}
			targeted = append(targeted, n)
		case v.touched():
			stale = append(stale, v.plannerNode(obs.hash, true))
		}
	}
	var err error
	if d.rollin, err = p.Install(targeted); err != nil {
		return rolloutDecision{}, err
	}
	if obs.refusal != nil {
		d.rollin.Start = nil
	}
	if d.removal, err = p.Remove(stale); err != nil {
		return rolloutDecision{}, err
	}
	return d, nil
}

// decideRemoval decides for a deleted Shim: every node that has the shim
// (or a Job changing it) is planned towards none, under the same strategy
// (install Jobs still running finish first).
func decideRemoval(obs *observed, p rollout.Planner) (rolloutDecision, error) {
	d := rolloutDecision{byName: make(map[string]*nodeView, len(obs.views))}
	var targets []rollout.Node
	for i := range obs.views {
		v := &obs.views[i]
		d.byName[v.node.Name] = v
		if v.touched() {
			targets = append(targets, v.plannerNode(obs.hash, true))
		}
	}
	var err error
	if d.removal, err = p.Remove(targets); err != nil {
		return rolloutDecision{}, err
	}
	return d, nil
}

// done: every targeted node has the current spec and no other node has
// the shim.
func (d rolloutDecision) done() bool { return d.rollin.Done && d.removal.Done }
