package operator

import (
	"maps"
	"slices"
	"time"

	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/operator/jobview"
)

// Batches: when several Shims have installs pending on the same node, the
// first one to start that node's Job takes the others' plans along (a
// NodePlanList), so that one installer run installs them all with one
// containerd restart. Each Shim offers the nodes it would install now and
// how many more it may start (its maxUpdate left); the Job's leader
// claims a slot of each partner's budget, and the partners count the node
// as changing from then on.

// offerTTL is how long an offer stands without being renewed: a Shim
// rolling out reconciles at least every resync period.
const offerTTL = time.Minute

// offer is what one Shim would install now.
type offer struct {
	shim   *v1alpha1.Shim
	target target
	// nodes are the nodes it would install; free how many more it may
	// start.
	nodes map[string]bool
	free  int
	// installed are the offered nodes that have an earlier version of
	// the Shim, drifted those that drifted (what).
	installed map[string]bool
	drifted   map[string]string
	// since is when it first offered at this target; at when last.
	since, at time.Time
}

// offer records the shim's offer (nil or no nodes: withdrawn) and says
// how much longer the Shim should wait before it starts any node, for
// others to offer theirs: the rest of the batch window since it first
// offered at this target, while another Shim is unsettled (unreconciled
// changes) or has an offer of its own; 0 when it may start now.
func (g *nodeGate) offer(shim string, o *offer, unsettled bool, now time.Time) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.window <= 0 {
		return 0
	}
	if o == nil || len(o.nodes) == 0 {
		delete(g.offers, shim)
		return 0
	}
	if g.offers == nil {
		g.offers = map[string]*offer{}
	}
	o.since, o.at = now, now
	if old := g.offers[shim]; old != nil && old.target.hash == o.target.hash {
		o.since = old.since
	}
	g.offers[shim] = o
	others := unsettled
	for name, other := range g.offers {
		others = others || name != shim && now.Sub(other.at) < offerTTL && len(other.nodes) > 0
	}
	if wait := o.since.Add(g.window).Sub(now); others && wait > 0 {
		return wait
	}
	return 0
}

// wanted returns the nodes other Shims would install now, with a free
// slot: the planner starts those first.
func (g *nodeGate) wanted(shim string, now time.Time) map[string]bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string]bool{}
	for name, o := range g.offers {
		if name != shim && o.free > 0 && now.Sub(o.at) < offerTTL {
			maps.Copy(out, o.nodes)
		}
	}
	return out
}

// claim takes, for the leader's Job on node, one slot of every other
// Shim that offered the node and has one (ordered by name). The
// partners' offers give the node up.
func (g *nodeGate) claim(node, leader string, now time.Time) []*offer {
	g.mu.Lock()
	defer g.mu.Unlock()
	var names []string
	for name, o := range g.offers {
		if name != leader && o.free > 0 && o.nodes[node] && now.Sub(o.at) < offerTTL {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	out := make([]*offer, len(names))
	for k, name := range names {
		o := g.offers[name]
		o.free--
		delete(o.nodes, node)
		out[k] = o
	}
	return out
}

// unclaim gives a partner its slot and the node back (the batch did not
// take it).
func (g *nodeGate) unclaim(node string, partners ...*offer) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, o := range partners {
		if g.offers[jobview.LabelValue(o.shim.Name)] == o {
			o.free++
			o.nodes[node] = true
		}
	}
}

// take gives up node and one slot of the shim's offer: it starts the node
// itself. Called with g.mu held.
func (g *nodeGate) take(shim, node string) {
	if o := g.offers[shim]; o != nil && o.nodes[node] {
		o.free--
		delete(o.nodes, node)
	}
}

// returned gives every Shim of a completed batch its slot back, until
// their next reconcile offers again (a failed one's slots stay taken: a
// failed node holds its Shim's slot). Called with g.mu held.
func (g *nodeGate) returned(h hold) {
	for _, m := range h.members {
		if o := g.offers[m]; o != nil {
			o.free++
		}
	}
}
