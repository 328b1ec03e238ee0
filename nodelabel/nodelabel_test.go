package nodelabel_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/nodelabel"
)

// TestMarkAndUnmark patches real Nodes: only the shim's label and
// annotation change, the kubelet's labels and a concurrent change stay.
func TestMarkAndUnmark(t *testing.T) {
	env := testutil.StartEnv(t)
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"kubernetes.io/hostname": "n1"}}}
	if err := env.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	stale := node.DeepCopy() // an old copy, as a controller's cache may hold

	// Meanwhile the "kubelet" changes the node.
	node.Labels["node.kubernetes.io/instance-type"] = "big"
	if err := env.Client.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	if err := nodelabel.Mark(ctx, env.Client, stale.Name, "spin", "uid-1", "hash-1"); err != nil {
		t.Fatal(err)
	}
	got := &corev1.Node{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), got); err != nil {
		t.Fatal(err)
	}
	if installed, hash := nodelabel.State(got, "spin"); !installed || hash != "hash-1" {
		t.Errorf("State = %v %q", installed, hash)
	}
	if got.Labels["node.kubernetes.io/instance-type"] != "big" {
		t.Error("the concurrent change was lost: Mark did a full update")
	}

	var list corev1.NodeList
	if err := env.Client.List(ctx, &list, client.MatchingLabelsSelector{Selector: nodelabel.InstalledSelector("spin")}); err != nil || len(list.Items) != 1 {
		t.Errorf("InstalledSelector found %d nodes (%v)", len(list.Items), err)
	}
	if err := nodelabel.Unmark(ctx, env.Client, "n1", "spin"); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), got); err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Labels[nodelabel.Key("spin")]; ok {
		t.Error("label still there")
	}
	if _, ok := got.Annotations[nodelabel.Key("spin")]; ok {
		t.Error("annotation still there")
	}
	if err := env.Client.List(ctx, &list, client.MatchingLabelsSelector{Selector: nodelabel.AnySelector("spin")}); err != nil || len(list.Items) != 0 {
		t.Errorf("AnySelector found %d nodes after Unmark", len(list.Items))
	}
	if err := nodelabel.Unmark(ctx, env.Client, "n1", "spin"); err != nil {
		t.Errorf("Unmark twice: %v", err)
	}
	// A state set after the uninstall removed the label (a stale view of
	// the node) does not bring it back.
	if err := nodelabel.SetState(ctx, env.Client, "n1", "spin", nodelabel.Installed, "uninstalling"); err != nil {
		t.Errorf("SetState on a node without the label: %v", err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), got); err != nil || got.Labels[nodelabel.Key("spin")] != "" {
		t.Errorf("SetState brought the label back: %q (%v)", got.Labels[nodelabel.Key("spin")], err)
	}
	bare := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "bare"}} // no labels at all
	if err := env.Client.Create(ctx, bare); err != nil {
		t.Fatal(err)
	}
	if err := nodelabel.SetState(ctx, env.Client, "bare", "spin", nodelabel.Installed, "uninstalling"); err != nil {
		t.Errorf("SetState on a node without labels: %v", err)
	}
	// On a labelled node it changes the value only.
	if err := nodelabel.Mark(ctx, env.Client, "n1", "spin", "uid-1", "hash-1"); err != nil {
		t.Fatal(err)
	}
	if err := nodelabel.SetState(ctx, env.Client, "n1", "spin", nodelabel.Installed, "uninstalling"); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), got); err != nil || got.Labels[nodelabel.Key("spin")] != "uninstalling" || got.Annotations[nodelabel.Key("spin")] != "hash-1" {
		t.Errorf("SetState: label %q, annotation %q (%v)", got.Labels[nodelabel.Key("spin")], got.Annotations[nodelabel.Key("spin")], err)
	}
}

// TestMarkOnRecordsTheMachine: MarkOn records the machine the node is
// (its machine ID, else its system UUID); once the node reports another
// one (reimaged in place), its label and records are the old machine's.
func TestMarkOnRecordsTheMachine(t *testing.T) {
	env := testutil.StartEnv(t)
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	if err := env.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	node.Status.NodeInfo.SystemUUID = "uuid-a" // no machine ID: the system UUID
	if err := env.Client.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	if err := nodelabel.MarkOn(ctx, env.Client, node, "spin", "uid-1", "hash-1"); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
		t.Fatal(err)
	}
	if v := nodelabel.VerificationOf(node, "spin", "uid-1"); v == nil || v.Machine != "uuid-a" || v.SpecHash != "hash-1" {
		t.Fatalf("the install's record %+v", v)
	}
	if r := nodelabel.RecordsOf(node, "spin", "uid-1"); r.Reimaged {
		t.Error("Reimaged on the same machine")
	}
	node.Status.NodeInfo.MachineID = "machine-b"
	if err := env.Client.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	if r := nodelabel.RecordsOf(node, "spin", "uid-1"); !r.Reimaged || r.Verification != nil {
		t.Errorf("after the reimage: %+v, want Reimaged and no verification of the Shim's", r)
	}
}

// TestSchedulingLabel: a Shim's scheduling label is written with its own
// label in the same request, with the same value, and goes with it; a
// state never brings it back on a node whose own label went.
func TestSchedulingLabel(t *testing.T) {
	env := testutil.StartEnv(t)
	ctx := context.Background()
	const key = "example.com/spin"
	also := nodelabel.WithSchedulingLabel(key)
	// Declared by the node pool, before any install: not shimkit's to trust.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{key: nodelabel.Installed}}}
	if err := env.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	labels := func() map[string]string {
		t.Helper()
		got := &corev1.Node{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), got); err != nil {
			t.Fatal(err)
		}
		return got.Labels
	}
	steps := []struct {
		name       string
		do         func() error
		own, sched string // "": absent
	}{
		{"Mark", func() error { return nodelabel.Mark(ctx, env.Client, "n1", "spin", "uid-1", "hash-1", also) }, nodelabel.Installed, nodelabel.Installed},
		{"SetState", func() error {
			return nodelabel.SetState(ctx, env.Client, "n1", "spin", nodelabel.Installed, "uninstalling", also)
		}, "uninstalling", "uninstalling"},
		{"Unmark", func() error { return nodelabel.Unmark(ctx, env.Client, "n1", "spin", also) }, "", ""},
		{"SetState after the Unmark", func() error {
			return nodelabel.SetState(ctx, env.Client, "n1", "spin", "uninstalling", "uninstalling", also)
		}, "", ""},
		{"MarkOn", func() error {
			return nodelabel.MarkOn(ctx, env.Client, node, "spin", "uid-1", "hash-1", also)
		}, nodelabel.Installed, nodelabel.Installed},
		{"Mark without the option", func() error { return nodelabel.Mark(ctx, env.Client, "n1", "spin", "uid-1", "hash-2") }, nodelabel.Installed, nodelabel.Installed},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		got := labels()
		own, hasOwn := got[nodelabel.Key("spin")]
		sched, hasSched := got[key]
		if own != st.own || hasOwn != (st.own != "") || sched != st.sched || hasSched != (st.sched != "") {
			t.Errorf("after %s: %s=%q (%v), %s=%q (%v); want %q and %q", st.name, nodelabel.Key("spin"), own, hasOwn, key, sched, hasSched, st.own, st.sched)
		}
	}
}
