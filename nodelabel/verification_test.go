package nodelabel_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shimkit/shimkit/nodelabel"
)

// TestVerificationRecord: Mark records the install as a verification at
// its spec, now; MarkVerified records a verifying Job's findings (at most
// a few mismatches kept); Unmark removes it; a record written by hand that
// does not parse reads as none.
func TestVerificationRecord(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithObjects(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}).Build()
	get := func() *corev1.Node {
		n := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: "n1"}, n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := time.Now().Add(-time.Second)
	const uid = types.UID("uid-1")
	if err := nodelabel.Mark(ctx, c, "n1", "spin", uid, "abc"); err != nil {
		t.Fatal(err)
	}
	v := nodelabel.VerificationOf(get(), "spin", uid)
	if v == nil || v.ShimUID != uid || v.SpecHash != "abc" || v.Time.Before(before) || v.Job != "" || len(v.Drift) != 0 {
		t.Fatalf("after Mark: %+v", v)
	}

	var drift []string
	for i := range 8 {
		drift = append(drift, fmt.Sprintf("file f%d was changed", i))
	}
	when := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	if err := nodelabel.MarkVerified(ctx, c, "n1", "spin", nodelabel.Verification{ShimUID: uid, SpecHash: "abc", Time: when, Job: "j1", Drift: drift}); err != nil {
		t.Fatal(err)
	}
	v = nodelabel.VerificationOf(get(), "spin", uid)
	if v == nil || v.Job != "j1" || !v.Time.Equal(when) || len(v.Drift) != 6 || v.Drift[0] != "file f0 was changed" || v.Drift[5] != "and 3 more" {
		t.Fatalf("after MarkVerified: %+v", v)
	}
	if len(drift) != 8 {
		t.Error("MarkVerified changed the caller's slice")
	}
	if nodelabel.VerificationOf(get(), "other", uid) != nil {
		t.Error("another shim's verification read")
	}

	if err := nodelabel.Unmark(ctx, c, "n1", "spin"); err != nil {
		t.Fatal(err)
	}
	if v := nodelabel.VerificationOf(get(), "spin", uid); v != nil {
		t.Errorf("after Unmark: %+v", v)
	}
	n := get()
	n.Annotations = map[string]string{nodelabel.VerifiedKey("spin"): "not json"}
	if nodelabel.VerificationOf(n, "spin", uid) != nil {
		t.Error("a record that does not parse was read")
	}
}
