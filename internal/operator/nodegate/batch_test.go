package nodegate

import (
	"maps"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

func testOffer(name, hash string, free int, nodes ...string) *Offer {
	o := &Offer{Shim: &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: name}}, Hash: hash, Nodes: map[string]bool{}, Free: free}
	for _, n := range nodes {
		o.Nodes[n] = true
	}
	return o
}

func sortedKeys(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }

// offer records o for shim and returns how long shim waits, as a plan
// does: it reads the gate first, then the offer is recorded.
func offer(g *Gate, shim string, o *Offer, unsettled bool, now time.Time) time.Duration {
	v := g.Read(shim, now)
	wait := v.Wait(o, unsettled)
	g.Offer(shim, o, now)
	return wait
}

// TestBatchOffers: a Shim waits for the batch window only while another
// Shim is unsettled or offers installs; a leader's reservation takes one
// slot of each partner that offered the node, and a completed batch
// returns every member's slot (a failed one does not).
func TestBatchOffers(t *testing.T) {
	now := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	g := &Gate{window: 2 * time.Second}

	if wait := offer(g, "a", testOffer("a", "h1", 1, "n1", "n2"), true, now); wait != 2*time.Second {
		t.Errorf("a, with b unsettled: wait %v, want 2s", wait)
	}
	if wait := offer(g, "a", testOffer("a", "h1", 1, "n1", "n2"), false, now.Add(time.Second)); wait != 0 {
		t.Errorf("a alone: wait %v, want 0", wait)
	}
	if wait := offer(g, "b", testOffer("b", "h2", 1, "n1", "n2"), false, now.Add(time.Second)); wait != 2*time.Second {
		t.Errorf("b, a offering: wait %v, want 2s", wait)
	}
	if wait := offer(g, "a", testOffer("a", "h1", 1, "n1", "n2"), false, now.Add(1500*time.Millisecond)); wait != 500*time.Millisecond {
		t.Errorf("a again at the same target, b offering: wait %v, want the rest of its window", wait)
	}
	view := g.Read("a", now)
	if got := sortedKeys(view.Wanted()); !slices.Equal(got, []string{"n1", "n2"}) {
		t.Errorf("wanted by others than a: %v", got)
	}

	ps := view.Partners("n1")
	if len(ps) != 1 || ps[0].Shim.Name != "b" {
		t.Fatalf("partners of n1 for a: %+v", ps)
	}
	r := Reservation{Node: "n1", Shim: "a", Job: "batch-n1", Members: []string{"a", "b"}, Partners: ps}
	if !view.Admit(r) || ps[0].Free != 0 || ps[0].Nodes["n1"] {
		t.Fatalf("admit n1 in the view: %+v", ps[0])
	}
	if again := view.Partners("n2"); len(again) != 0 {
		t.Errorf("b has no slot left in the view, yet is a partner: %+v", again)
	}
	if g.offers["b"].Free != 1 {
		t.Error("admitting in a view changed the gate")
	}
	if !g.Reserve(r, now) {
		t.Fatal("reserve n1")
	}
	if got := g.InFlight("b"); got["n1"] != "batch-n1" {
		t.Errorf("b's nodes in flight: %v", got)
	}
	if o := g.offers["a"]; o.Free != 0 || o.Nodes["n1"] {
		t.Errorf("a's offer after it started n1: %+v", o)
	}
	if o := g.offers["b"]; o.Free != 0 || o.Nodes["n1"] {
		t.Errorf("b's offer after the batch took n1: %+v", o)
	}
	if g.Reserve(Reservation{Node: "n1", Shim: "b", Job: "other"}, now) {
		t.Error("b reserved n1 while the batch holds it")
	}

	job := gateJob("batch-n1", "a", "n1", true, now)
	job.Annotations = map[string]string{jobview.MembersAnnotation: `[{"shim":"a","specHash":"h1"},{"shim":"b","specHash":"h2"}]`}
	g.Sync([]*batchv1.Job{job}, now.Add(time.Second))
	if a, b := g.offers["a"].Free, g.offers["b"].Free; a != 1 || b != 1 {
		t.Errorf("after the batch completed: free a=%d b=%d, want 1 and 1", a, b)
	}

	// A failed batch returns no slot.
	view = g.Read("a", now)
	ps = view.Partners("n2")
	if !g.Reserve(Reservation{Node: "n2", Shim: "a", Job: "batch-n2", Members: []string{"a", "b"}, Partners: ps}, now) || len(ps) != 1 {
		t.Fatal("reserve n2")
	}
	failed := gateJob("batch-n2", "a", "n2", false, now)
	failed.Annotations = job.Annotations
	failed.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue}}
	g.Sync([]*batchv1.Job{failed}, now.Add(time.Second))
	if a, b := g.offers["a"].Free, g.offers["b"].Free; a != 0 || b != 0 {
		t.Errorf("after the batch failed: free a=%d b=%d, want 0 and 0", a, b)
	}

	if g.Offer("b", nil, now); g.offers["b"] != nil {
		t.Error("a withdrawn offer stays")
	}
	off := &Gate{window: -1}
	if wait := offer(off, "a", testOffer("a", "h1", 1, "n1"), true, now); wait != 0 || off.offers != nil {
		t.Errorf("batching off: wait %v, offers %v", wait, off.offers)
	}
}

// TestReserveRefusesWhatChanged: a reservation made on a view is refused,
// changing nothing, when another Shim took the node or the partner's slot
// after the view was read; the view's own reservations never touch the
// gate.
func TestReserveRefusesWhatChanged(t *testing.T) {
	now := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	g := &Gate{window: time.Second, max: 2}
	g.Offer("b", testOffer("b", "h2", 1, "n1", "n2"), now)
	g.Offer("c", testOffer("c", "h3", 1, "n1"), now)
	va, vc := g.Read("a", now), g.Read("c", now)
	batch := Reservation{Node: "n1", Shim: "a", Job: "a-n1", Members: []string{"a", "b"}, Partners: va.Partners("n1")}
	cs := Reservation{Node: "n2", Shim: "c", Job: "c-n2", Members: []string{"c", "b"}, Partners: vc.Partners("n2")}
	if !va.Admit(batch) || !vc.Admit(cs) || len(cs.Partners) != 1 {
		t.Fatal("the views admit their nodes, with b along")
	}
	// c takes b's only slot first, on n2.
	if !g.Reserve(cs, now) {
		t.Fatal("c reserves n2")
	}
	before := g.offers["c"].Free
	if g.Reserve(batch, now) {
		t.Error("a's batch reserved n1 with b's slot gone")
	}
	if _, held := g.held["n1"]; held || g.offers["c"].Free != before {
		t.Error("a refused reservation changed the gate")
	}
	if !g.Reserve(Reservation{Node: "n1", Shim: "a", Job: "a-n1"}, now) {
		t.Error("a alone cannot reserve the free n1")
	}
	if g.Reserve(Reservation{Node: "n3", Shim: "d", Job: "d-n3"}, now) {
		t.Error("a third node past the cap of 2")
	}
	if g.Reserve(Reservation{Node: "n1", Shim: "a", Job: "a-n1"}, now.Add(time.Second)); len(g.held) != 2 {
		t.Errorf("reserving the Job that holds the node again: holds %v", g.held)
	}
}
