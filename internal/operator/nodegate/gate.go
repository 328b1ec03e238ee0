package nodegate

import (
	"slices"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/shimkit/shimkit/internal/operator/jobview"
)

// Retry is how soon a Shim waiting for a node held by another Shim's
// installer looks again.
const Retry = 5 * time.Second

// Grace is how long a hold whose Job the cache has not shown yet is
// kept: the cache lags behind the Jobs the operator creates.
const Grace = time.Minute

// Gate lets at most one installer Job run on a node at any moment,
// across all Shims, so that two Shims never restart one node's containerd
// back to back or interleaved; and, with max set, at most max nodes run
// one at once, whatever each Shim's maxUpdate (their budgets would add up
// otherwise). It is the operator's own: every installer Job is created
// through it, and it learns the running ones from the Jobs cache (after a
// restart too).
type Gate struct {
	mu   sync.Mutex
	max  int
	held map[string]hold // node → the Job running there
	// offers are, by Shim, the installs each Shim would start now: another
	// Shim's Job on one of those nodes takes it along (batch.go).
	offers map[string]*Offer
	// window is how long a Shim that just got work waits for others to
	// offer theirs (Options.BatchWindow).
	window time.Duration
}

// New returns a Gate that lets at most max nodes (0: any number) run an
// installer at once, and makes a Shim that just got work wait up to window
// for others to offer theirs (0 or less: no batches).
func New(max int, window time.Duration) *Gate {
	return &Gate{max: max, window: window}
}

type hold struct {
	shim, job string
	// members are the Shims (jobview.LabelValue) whose plans the Job carries: the
	// leader (shim) alone, or every Shim of a batch.
	members []string
	since   time.Time
	seen    bool // the cache has shown the Job running
	verify  bool // a verifying Job: it changes nothing
}

// Sync brings the holds up to date with the Jobs of the namespace:
// running ones hold their node, finished ones release it, and a hold the
// cache does not show yet is kept for Grace.
func (g *Gate) Sync(jobs []*batchv1.Job, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held == nil {
		g.held = map[string]hold{}
	}
	state := map[string]bool{}    // Job name → running
	complete := map[string]bool{} // Job name → completed
	for _, j := range jobs {
		v := jobview.ViewOf(j)
		running := v.Running()
		state[j.Name] = running
		complete[j.Name] = v.Condition(batchv1.JobComplete) != nil
		node := jobview.NodeOf(j)
		if running && node != "" {
			if h, ok := g.held[node]; !ok || h.job == j.Name || !h.seen {
				g.held[node] = hold{shim: j.Labels[jobview.LabelShim], job: j.Name, members: jobview.MemberLabels(j), since: j.CreationTimestamp.Time, seen: true, verify: j.Labels[jobview.LabelOp] == jobview.OpVerify}
			}
		}
	}
	for node, h := range g.held {
		running, known := state[h.job]
		if known && !running || !known && (h.seen || now.Sub(h.since) > Grace) {
			delete(g.held, node)
			if complete[h.job] {
				g.returned(h)
			}
		}
	}
}

// Reserve commits a reservation the plan made on its View: the node is
// held for the Job, the leader's offer gives up the node and one slot, and
// each partner's too. It fails, changing nothing, when another Shim's Job
// holds the node, the cap is reached, or a partner no longer offers the
// node at the same target with a slot left. Reserving the Job that holds
// the node already succeeds.
func (g *Gate) Reserve(r Reservation, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held == nil {
		g.held = map[string]hold{}
	}
	if h, ok := g.held[r.Node]; ok {
		if h.shim != r.Shim {
			return false
		}
		if h.job == r.Job {
			return true
		}
	} else if g.max > 0 && len(g.held) >= g.max {
		return false
	}
	for _, p := range r.Partners {
		o := g.offers[jobview.LabelValue(p.Shim.Name)]
		if o == nil || o.Hash != p.Hash || o.Free <= 0 || !o.Nodes[r.Node] || now.Sub(o.at) >= OfferTTL {
			return false
		}
	}
	g.held[r.Node] = hold{shim: r.Shim, job: r.Job, members: r.Members, since: now, verify: r.Verify}
	if !r.Verify {
		g.take(r.Shim, r.Node)
	}
	for _, p := range r.Partners {
		g.take(jobview.LabelValue(p.Shim.Name), r.Node)
	}
	return true
}

// InFlight returns the nodes held by a Job of the shim or a batch Job
// that carries its plan, by node: the Job's name. The reconcile counts
// them as changing even before its cache shows their Jobs (a reconcile
// right after the one that created them would otherwise create them
// again, and be refused: AlreadyExists).
func (g *Gate) InFlight(shim string) map[string]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string]string{}
	for node, h := range g.held {
		if !h.verify && (h.shim == shim || slices.Contains(h.members, shim)) {
			out[node] = h.job
		}
	}
	return out
}

// Release gives the node back (its Job could not be created).
func (g *Gate) Release(node, job string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if h, ok := g.held[node]; ok && h.job == job {
		delete(g.held, node)
	}
}
