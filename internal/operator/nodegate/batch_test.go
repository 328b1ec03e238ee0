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

// TestBatchOffers: a Shim waits for the batch window only while another
// Shim is unsettled or offers installs; a leader claims one slot of each
// partner that offered the node, gives it back when the batch does not
// start, and a completed batch returns every member's slot (a failed one
// does not).
func TestBatchOffers(t *testing.T) {
	now := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	g := &Gate{window: 2 * time.Second}

	if wait := g.Offer("a", testOffer("a", "h1", 1, "n1", "n2"), true, now); wait != 2*time.Second {
		t.Errorf("a, with b unsettled: wait %v, want 2s", wait)
	}
	if wait := g.Offer("a", testOffer("a", "h1", 1, "n1", "n2"), false, now.Add(time.Second)); wait != 0 {
		t.Errorf("a alone: wait %v, want 0", wait)
	}
	if wait := g.Offer("b", testOffer("b", "h2", 1, "n1", "n2"), false, now.Add(time.Second)); wait != 2*time.Second {
		t.Errorf("b, a offering: wait %v, want 2s", wait)
	}
	if wait := g.Offer("a", testOffer("a", "h1", 1, "n1", "n2"), false, now.Add(1500*time.Millisecond)); wait != 500*time.Millisecond {
		t.Errorf("a again at the same target, b offering: wait %v, want the rest of its window", wait)
	}
	if got := sortedKeys(g.Wanted("a", now)); !slices.Equal(got, []string{"n1", "n2"}) {
		t.Errorf("wanted by others than a: %v", got)
	}

	ps := g.Claim("n1", "a", now)
	if len(ps) != 1 || ps[0].Shim.Name != "b" || ps[0].Free != 0 || ps[0].Nodes["n1"] {
		t.Fatalf("claim n1 for a: %+v", ps)
	}
	if again := g.Claim("n2", "a", now); len(again) != 0 {
		t.Errorf("b has no slot left, yet claimed: %+v", again)
	}
	g.Unclaim("n1", ps...)
	if o := g.offers["b"]; o.Free != 1 || !o.Nodes["n1"] {
		t.Errorf("after unclaim: %+v", o)
	}
	ps = g.Claim("n1", "a", now)
	if !g.Acquire("n1", "a", "batch-n1", []string{"a", "b"}, now) {
		t.Fatal("acquire n1")
	}
	if got := g.InFlight("b"); got["n1"] != "batch-n1" {
		t.Errorf("b's nodes in flight: %v", got)
	}
	if o := g.offers["a"]; o.Free != 0 || o.Nodes["n1"] {
		t.Errorf("a's offer after it started n1: %+v", o)
	}
	if g.Acquire("n1", "b", "other", nil, now) {
		t.Error("b acquired n1 while the batch holds it")
	}

	job := gateJob("batch-n1", "a", "n1", true, now)
	job.Annotations = map[string]string{jobview.MembersAnnotation: `[{"shim":"a","specHash":"h1"},{"shim":"b","specHash":"h2"}]`}
	g.Sync([]*batchv1.Job{job}, now.Add(time.Second))
	if a, b := g.offers["a"].Free, ps[0].Free; a != 1 || b != 1 {
		t.Errorf("after the batch completed: free a=%d b=%d, want 1 and 1", a, b)
	}

	// A failed batch returns no slot.
	ps = g.Claim("n2", "a", now)
	if !g.Acquire("n2", "a", "batch-n2", []string{"a", "b"}, now) || len(ps) != 1 {
		t.Fatal("acquire n2")
	}
	failed := gateJob("batch-n2", "a", "n2", false, now)
	failed.Annotations = job.Annotations
	failed.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue}}
	g.Sync([]*batchv1.Job{failed}, now.Add(time.Second))
	if a, b := g.offers["a"].Free, ps[0].Free; a != 0 || b != 0 {
		t.Errorf("after the batch failed: free a=%d b=%d, want 0 and 0", a, b)
	}

	if g.Offer("b", nil, false, now); g.offers["b"] != nil {
		t.Error("a withdrawn offer stays")
	}
	off := &Gate{window: -1}
	if wait := off.Offer("a", testOffer("a", "h1", 1, "n1"), true, now); wait != 0 || off.offers != nil {
		t.Errorf("batching off: wait %v, offers %v", wait, off.offers)
	}
}
