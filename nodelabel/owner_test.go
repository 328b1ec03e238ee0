package nodelabel_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shimkit/shimkit/nodelabel"
)

// TestRecordsBelongToTheShimObject: the records a Shim leaves on a node
// name its UID; a Shim of the same name with another UID (deleted and
// created again) reads none of them, finds them stale, and drops them; a
// failure recorded before records named their Shim is stale too, a
// verification of then is the Shim's (its label came with it).
func TestRecordsBelongToTheShimObject(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithObjects(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{"keep": "me"}}}).Build()
	get := func() *corev1.Node {
		n := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: "n1"}, n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	const old, successor = types.UID("uid-old"), types.UID("uid-new")
	if err := nodelabel.Mark(ctx, c, "n1", "demo", old, "h1"); err != nil {
		t.Fatal(err)
	}
	if err := nodelabel.MarkFailed(ctx, c, "n1", "demo", nodelabel.Failure{ShimUID: old, Op: "install", SpecHash: "h2", Reason: "Conflict", Time: time.Now()}); err != nil {
		t.Fatal(err)
	}
	n := get()
	if own := nodelabel.RecordsOf(n, "demo", old); own.Failure == nil || own.Verification == nil || own.LabelledByOther || len(own.Stale) != 0 {
		t.Fatalf("the writer's own records: %v", n.Annotations)
	}
	if f := nodelabel.FailureOf(n, "demo", successor); f != nil {
		t.Errorf("the successor read its predecessor's failure: %+v", f)
	}
	if v := nodelabel.VerificationOf(n, "demo", successor); v != nil {
		t.Errorf("the successor read its predecessor's verification: %+v", v)
	}
	theirs := nodelabel.RecordsOf(n, "demo", successor)
	if !theirs.LabelledByOther || theirs.Failure != nil || theirs.Verification != nil {
		t.Errorf("the predecessor's records taken as the successor's: %+v", theirs)
	}
	stale := theirs.Stale
	if !slices.Equal(stale, []string{nodelabel.FailureKey("demo")}) {
		t.Errorf("stale records = %v", stale)
	}
	if err := nodelabel.DropRecords(ctx, c, "n1", stale...); err != nil {
		t.Fatal(err)
	}
	n = get()
	if _, ok := n.Annotations[nodelabel.FailureKey("demo")]; ok || n.Annotations["keep"] != "me" || !nodelabel.RecordsOf(n, "demo", successor).LabelledByOther {
		t.Errorf("after DropRecords: %v %v", n.Labels, n.Annotations)
	}
	// Without the label, the predecessor's verification is stale too.
	delete(n.Labels, nodelabel.Key("demo"))
	if got := nodelabel.RecordsOf(n, "demo", successor); got.LabelledByOther || !slices.Equal(got.Stale, []string{nodelabel.VerifiedKey("demo")}) {
		t.Errorf("an unlabelled node's predecessor verification: %+v", got)
	}

	// Records of before UIDs.
	n.Annotations[nodelabel.FailureKey("demo")] = `{"op":"install","specHash":"h2","reason":"Conflict","time":"2026-11-01T00:00:00Z"}`
	n.Annotations[nodelabel.VerifiedKey("demo")] = `{"specHash":"h1","time":"2026-11-01T00:00:00Z"}`
	legacy := nodelabel.RecordsOf(n, "demo", successor)
	if legacy.Failure != nil || !slices.Equal(legacy.Stale, []string{nodelabel.FailureKey("demo")}) {
		t.Errorf("a failure naming no Shim blocks a Shim: %+v", legacy)
	}
	if legacy.Verification == nil || legacy.LabelledByOther {
		t.Errorf("a verification naming no Shim is not the Shim's: %+v", legacy)
	}
	if err := nodelabel.Unmark(ctx, c, "n1", "demo"); err != nil {
		t.Fatal(err)
	}
	if nodelabel.HasAny(get(), "demo") {
		t.Errorf("Unmark left %v %v", get().Labels, get().Annotations)
	}
}
