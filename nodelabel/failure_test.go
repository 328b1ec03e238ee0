package nodelabel_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shimkit/shimkit/nodelabel"
)

// TestFailureRecord: a failure is written on the node, read back, kept
// short, and removed by a retry (ClearFailure) or by the node reaching a
// state (Mark, Unmark) in the same request that records that state.
func TestFailureRecord(t *testing.T) {
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{"keep": "me"}}}
	c := fake.NewClientBuilder().WithObjects(node).Build()
	get := func() *corev1.Node {
		n := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: "n1"}, n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	when := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	const uid = types.UID("uid-1")
	f := nodelabel.Failure{ShimUID: uid, Op: "install", SpecHash: "abc", Reason: "RestartFailed", Message: strings.Repeat("x", 2000), Job: "j1", Time: when}
	if err := nodelabel.MarkFailed(ctx, c, "n1", "spin", f); err != nil {
		t.Fatal(err)
	}
	got := nodelabel.FailureOf(get(), "spin", uid)
	if got == nil || got.Reason != "RestartFailed" || got.SpecHash != "abc" || got.Job != "j1" || !got.Time.Equal(when) || len(got.Message) > 520 {
		t.Fatalf("FailureOf = %+v", got)
	}
	if nodelabel.FailureOf(get(), "other", uid) != nil {
		t.Error("another shim's failure read")
	}
	for name, clear := range map[string]func() error{
		"retry":  func() error { return nodelabel.ClearFailure(ctx, c, "n1", "spin") },
		"mark":   func() error { return nodelabel.Mark(ctx, c, "n1", "spin", uid, "def") },
		"unmark": func() error { return nodelabel.Unmark(ctx, c, "n1", "spin") },
	} {
		if err := nodelabel.MarkFailed(ctx, c, "n1", "spin", f); err != nil {
			t.Fatal(err)
		}
		if err := clear(); err != nil {
			t.Fatal(err)
		}
		n := get()
		if nodelabel.FailureOf(n, "spin", uid) != nil || n.Annotations["keep"] != "me" {
			t.Errorf("%s: annotations %v", name, n.Annotations)
		}
	}
	bad := get()
	bad.Annotations[nodelabel.FailureKey("spin")] = "not json"
	if nodelabel.FailureOf(bad, "spin", uid) != nil {
		t.Error("a hand-written record read as a failure")
	}
}
