package decide

import (
	"github.com/shimkit/shimkit/internal/operator/nodegate"
	"github.com/shimkit/shimkit/rollout"
)

// BatchOffer is what the Shim tells the node gate of its installs, so that
// one installer Job per node carries the installs of every Shim changed
// together: Offer (nil: it offers nothing, and withdraws an earlier offer)
// and Unsettled, whether the Shims it might share a Job with may still
// offer theirs (the gate then has it wait up to the batch window).
type BatchOffer struct {
	Offer     *nodegate.Offer
	Unsettled bool
}

// Batch decides the Shim's BatchOffer for the decision's rollout (rollin;
// batching: Options.BatchWindow is not negative). It offers the nodes it
// would install now and how many it may still start; with nothing to
// install, or no other Shim and no new change of its own, it offers
// nothing and never waits. A Shim whose own change is new counts as
// unsettled: Shims applied with it (kubectl apply -f dir/, one GitOps
// commit) may not be in the cache yet when it is reconciled first; so
// does another Shim's unreconciled change, or a node another Shim will
// offer once it sees it (one that just joined).
func Batch(obs *Snapshot, rollin rollout.Plan, batching bool) BatchOffer {
	if !batching || rollin.Halted || len(rollin.Start) == 0 && rollin.InFlight == 0 {
		return BatchOffer{}
	}
	self := obs.Shim.Generation != obs.Shim.Status.ObservedGeneration
	unsettled, others := self, false
	for i := range obs.Shims {
		s := &obs.Shims[i]
		if s.Name == obs.Shim.Name || !s.DeletionTimestamp.IsZero() {
			continue
		}
		others = true
		unsettled = unsettled || s.Generation != s.Status.ObservedGeneration
	}
	if !others && !self {
		return BatchOffer{}
	}
	o := &nodegate.Offer{Shim: obs.Shim.DeepCopy(), Hash: obs.Hash, Artifact: obs.Art, Nodes: map[string]bool{}, Free: max(0, rollin.Budget-rollin.InFlight),
		Installed: map[string]bool{}, Drifted: map[string]string{}}
	for i := range obs.Views {
		v := &obs.Views[i]
		// A node undone with another Shim's plan is installed alone.
		if v.Targeted() && v.Plan != nil && !v.Held && v.NeedsInstall(obs.Hash) && (v.Job == nil || !v.Job.Sibling()) {
			o.Nodes[v.Node.Name] = true
			if v.Installed() {
				o.Installed[v.Node.Name] = true
			}
			if v.Drifted != "" {
				o.Drifted[v.Node.Name] = v.Drifted
			}
		}
	}
	return BatchOffer{Offer: o, Unsettled: unsettled || OthersWillOffer(obs, obs.Shims, o.Nodes)}
}
