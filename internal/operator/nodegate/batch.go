package nodegate

import (
	"time"

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

// Offer records the shim's offer (nil or no nodes: withdrawn); with
// batching off it records nothing. How long the Shim waits for others'
// offers is the plan's (View.Wait), on what it read before.
func (g *Gate) Offer(shim string, o *Offer, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.window <= 0 {
		return
	}
	if o == nil || len(o.Nodes) == 0 {
		delete(g.offers, shim)
		return
	}
	if g.offers == nil {
		g.offers = map[string]*Offer{}
	}
	o = o.clone()
	o.since, o.at = now, now
	if old := g.offers[shim]; old != nil && old.Hash == o.Hash {
		o.since = old.since
	}
	g.offers[shim] = o
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
