package operator

import (
	"encoding/json"
	"maps"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// Batches: when several Shims have installs pending on the same node, the
// first one to start that node's Job takes the others' plans along (a
// NodePlanList), so that one installer run installs them all with one
// containerd restart. Each Shim offers the nodes it would install now and
// how many more it may start (its maxUpdate left); the Job's leader
// claims a slot of each partner's budget, and the partners count the node
// as changing from then on.

// MembersAnnotation on a batch Job lists the Shims whose install plans it
// carries: a JSON list of {"shim", "specHash", "digest"}, one per plan.
const MembersAnnotation = "shim.containerd.x-k8s.io/members"

// offerTTL is how long an offer stands without being renewed: a Shim
// rolling out reconciles at least every resync period.
const offerTTL = time.Minute

// member is one Shim of a batch Job.
type member struct {
	Shim     string `json:"shim"`
	SpecHash string `json:"specHash"`
	Digest   string `json:"digest,omitempty"`
	// Canary is the hash of the member's canary (annotationCanary).
	Canary string `json:"canary,omitempty"`
}

// membersOf returns a batch Job's members; nil for a Job of one Shim.
func membersOf(j *batchv1.Job) []member {
	raw := j.Annotations[MembersAnnotation]
	if raw == "" {
		return nil
	}
	var ms []member
	if err := json.Unmarshal([]byte(raw), &ms); err != nil {
		return nil
	}
	return ms
}

// memberLabels returns the label values of a batch Job's Shims.
func memberLabels(j *batchv1.Job) []string {
	var out []string
	for _, m := range membersOf(j) {
		out = append(out, labelValue(m.Shim))
	}
	return out
}

// jobFor returns the view of a Job as the shim's: its own Job, or a batch
// Job carrying its plan (whose spec hash and digest are the member's).
func jobFor(j *batchv1.Job, shim *v1alpha1.Shim) (*jobView, bool) {
	ms := membersOf(j)
	if ms == nil {
		if j.Labels[labelShim] != labelValue(shim.Name) || !metav1.IsControlledBy(j, shim) {
			return nil, false
		}
		return viewJob(j), true
	}
	if !hasOwner(j, shim.UID) {
		return nil, false
	}
	for _, m := range ms {
		if m.Shim == shim.Name {
			v := viewJob(j)
			v.op, v.specHash, v.digest, v.canary, v.batch = opInstall, m.SpecHash, m.Digest, m.Canary, len(ms)
			return v, true
		}
	}
	return nil, false
}

// hasOwner: one of the Job's owner references names the UID (a batch
// Job's partners are owners, not its controller).
func hasOwner(j *batchv1.Job, uid types.UID) bool {
	return slices.ContainsFunc(j.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == uid })
}

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
		if g.offers[labelValue(o.shim.Name)] == o {
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
