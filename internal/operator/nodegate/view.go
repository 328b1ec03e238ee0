package nodegate

import (
	"maps"
	"slices"
	"time"
)

// A reconcile decides on what it read of the gate (Read: a View, its own
// copy) and the executor commits what the plan reserved (Reserve), which
// fails, changing nothing, when another reconcile took the node or the
// partners' slots meanwhile: the plan is carried out or refused, never
// decided again.

// View is the gate as one Shim's reconcile read it, a copy to decide on:
// the nodes held and by whom, the cap, the other Shims' standing offers
// and the reader's own offer. Its methods change only the copy, as the
// plan reserves nodes one after the other.
type View struct {
	// Shim is the reader (jobview.LabelValue of its name); Now when it
	// read.
	Shim string
	Now  time.Time
	// Max is the cap on nodes running an installer (0: none); Window the
	// batch window (0 or less: no batches).
	Max    int
	Window time.Duration
	// Held are the nodes held, each by a Shim's Job.
	Held map[string]Holder
	// Offers are the other Shims' standing offers (copies), by Shim
	// name; Own is the reader's own standing offer (nil: none).
	Offers map[string]*Offer
	Own    *Offer
}

// Holder is the Job that holds a node: its Shim and name.
type Holder struct{ Shim, Job string }

// Reservation is a node the plan reserves for one Job: the leader's
// (Shim) Job of that name, carrying the plans of Members (a batch:
// the leader and every partner; nil: the leader alone), with one slot of
// each partner's offer (Partners, by Shim name, each at the Hash it
// offered); Verify: a verifying Job, which changes nothing.
type Reservation struct {
	Node, Shim, Job string
	Members         []string
	Partners        []*Offer
	Verify          bool
}

// Read returns the gate as shim sees it at now.
func (g *Gate) Read(shim string, now time.Time) View {
	g.mu.Lock()
	defer g.mu.Unlock()
	v := View{Shim: shim, Now: now, Max: g.max, Window: g.window, Held: make(map[string]Holder, len(g.held)), Offers: map[string]*Offer{}}
	for node, h := range g.held {
		v.Held[node] = Holder{Shim: h.shim, Job: h.job}
	}
	for name, o := range g.offers {
		c := o.clone()
		if name == shim {
			v.Own = c
			continue
		}
		if now.Sub(o.at) < OfferTTL {
			v.Offers[name] = c
		}
	}
	return v
}

// Copy is a copy of the view to decide on: reserving in it changes
// neither the gate nor the view it was copied from.
func (v *View) Copy() View {
	c := *v
	c.Held = maps.Clone(v.Held)
	c.Offers = maps.Clone(v.Offers)
	for name, o := range c.Offers {
		c.Offers[name] = o.clone()
	}
	return c
}

func (o *Offer) clone() *Offer {
	c := *o
	c.Nodes = maps.Clone(o.Nodes)
	return &c
}

// Wait is how much longer the reader waits before it starts any node,
// once it offers o (unsettled: a Shim it may share a Job with has not
// offered yet): the rest of the batch window since it first offered at
// this target, while another Shim is unsettled or offers installs of its
// own; 0 when it may start now, offers nothing, or batching is off.
func (v *View) Wait(o *Offer, unsettled bool) time.Duration {
	if v.Window <= 0 || o == nil || len(o.Nodes) == 0 {
		return 0
	}
	since := v.Now
	if v.Own != nil && v.Own.Hash == o.Hash {
		since = v.Own.since
	}
	others := unsettled
	for _, other := range v.Offers {
		others = others || len(other.Nodes) > 0
	}
	if wait := since.Add(v.Window).Sub(v.Now); others && wait > 0 {
		return wait
	}
	return 0
}

// Wanted returns the nodes other Shims would install now, with a free
// slot: the planner starts those first.
func (v *View) Wanted() map[string]bool {
	out := map[string]bool{}
	for _, o := range v.Offers {
		if o.Free > 0 {
			maps.Copy(out, o.Nodes)
		}
	}
	return out
}

// Partners are the other Shims that offered node and have a slot left,
// ordered by name: a leader's Job there may take them along (Take).
func (v *View) Partners(node string) []*Offer {
	var out []*Offer
	for _, name := range slices.Sorted(maps.Keys(v.Offers)) {
		if o := v.Offers[name]; o.Free > 0 && o.Nodes[node] {
			out = append(out, o)
		}
	}
	return out
}

// Admit reserves r's node in the view: false when another Shim's Job
// holds it or the cap is reached. The partners taken along give the node
// and a slot up.
func (v *View) Admit(r Reservation) bool {
	if h, ok := v.Held[r.Node]; ok && h.Shim != r.Shim || !ok && v.Max > 0 && len(v.Held) >= v.Max {
		return false
	}
	if v.Held == nil {
		v.Held = map[string]Holder{}
	}
	v.Held[r.Node] = Holder{Shim: r.Shim, Job: r.Job}
	for _, p := range r.Partners {
		p.Free--
		delete(p.Nodes, r.Node)
	}
	return true
}
