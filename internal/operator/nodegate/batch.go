package nodegate

import (
	"maps"
	"slices"
	"time"

	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// Batches: when several Shims have installs pending on the same node, the
// first one to start that node's Job takes the others' plans along (a
// NodePlanList), so that one installer run installs them all with one
// containerd restart. Each Shim offers the nodes it would install now and
// how many more it may start (its maxUpdate left); the Job's leader
// claims a slot of each partner's budget, and the partners count the node
// as changing from then on.

// OfferTTL is how long an offer stands without being renewed: a Shim
// rolling out reconciles at least every resync period.
const OfferTTL = time.Minute

// Offer is what one Shim would install now.
type Offer struct {
	Shim *v1alpha1.Shim
	// Hash and Artifact are the target it installs: the spec's hash and
	// the artifact pinned for it.
	Hash     string
	Artifact *v1alpha1.ResolvedArtifact
	// nodes are the nodes it would install; free how many more it may
	// start.
	Nodes map[string]bool
	Free  int
	// installed are the offered nodes that have an earlier version of
	// the Shim, drifted those that drifted (what).
	Installed map[string]bool
	Drifted   map[string]string
	// since is when it first offered at this target; at when last.
	since, at time.Time
}

// Offer records the shim's offer (nil or no nodes: withdrawn) and says
// how much longer the Shim should wait before it starts any node, for
// others to offer theirs: the rest of the batch window since it first
// offered at this target, while another Shim is unsettled (unreconciled
// changes) or has an offer of its own; 0 when it may start now.
func (g *Gate) Offer(shim string, o *Offer, unsettled bool, now time.Time) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.window <= 0 {
		return 0
	}
	if o == nil || len(o.Nodes) == 0 {
		delete(g.offers, shim)
		return 0
	}
	if g.offers == nil {
		g.offers = map[string]*Offer{}
	}
	o.since, o.at = now, now
	if old := g.offers[shim]; old != nil && old.Hash == o.Hash {
		o.since = old.since
	}
	g.offers[shim] = o
	others := unsettled
	for name, other := range g.offers {
		others = others || name != shim && now.Sub(other.at) < OfferTTL && len(other.Nodes) > 0
	}
	if wait := o.since.Add(g.window).Sub(now); others && wait > 0 {
		return wait
	}
	return 0
}

// Wanted returns the nodes other Shims would install now, with a free
// slot: the planner starts those first.
func (g *Gate) Wanted(shim string, now time.Time) map[string]bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string]bool{}
	for name, o := range g.offers {
		if name != shim && o.Free > 0 && now.Sub(o.at) < OfferTTL {
			maps.Copy(out, o.Nodes)
		}
	}
	return out
}

// Claim takes, for the leader's Job on node, one slot of every other
// Shim that offered the node and has one (ordered by name). The
// partners' offers give the node up.
func (g *Gate) Claim(node, leader string, now time.Time) []*Offer {
	g.mu.Lock()
	defer g.mu.Unlock()
	var names []string
	for name, o := range g.offers {
		if name != leader && o.Free > 0 && o.Nodes[node] && now.Sub(o.at) < OfferTTL {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	out := make([]*Offer, len(names))
	for k, name := range names {
		o := g.offers[name]
		o.Free--
		delete(o.Nodes, node)
		out[k] = o
	}
	return out
}

// Unclaim gives a partner its slot and the node back (the batch did not
// take it).
func (g *Gate) Unclaim(node string, partners ...*Offer) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, o := range partners {
		if g.offers[jobview.LabelValue(o.Shim.Name)] == o {
			o.Free++
			o.Nodes[node] = true
		}
	}
}

// take gives up node and one slot of the shim's offer: it starts the node
// itself. Called with g.mu held.
func (g *Gate) take(shim, node string) {
	if o := g.offers[shim]; o != nil && o.Nodes[node] {
		o.Free--
		delete(o.Nodes, node)
	}
}

// returned gives every Shim of a completed batch its slot back, until
// their next reconcile offers again (a failed one's slots stay taken: a
// failed node holds its Shim's slot). Called with g.mu held.
func (g *Gate) returned(h hold) {
	for _, m := range h.members {
		if o := g.offers[m]; o != nil {
			o.Free++
		}
	}
}
