package operator_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestStartupTaint: a node that joins with the startup taint loses it
// only once every Shim that selects it is installed there; a node no Shim
// selects keeps it.
func TestStartupTaint(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	taint := corev1.Taint{Key: operator.PendingTaint, Effect: corev1.TaintEffectNoSchedule}
	for _, n := range []struct {
		name   string
		labels map[string]string
	}{{"tainted", map[string]string{"runtimes": "both"}}, {"unselected", map[string]string{"runtimes": "none"}}} {
		node := &corev1.Node{}
		node.Name, node.Labels = n.name, n.labels
		node.Spec.Taints = []corev1.Taint{taint}
		if err := env.Client.Create(ctx, node); err != nil {
			t.Fatal(err)
		}
	}
	startKubelet(t, env, 300*time.Millisecond, nil)
	startOperator(t, env)
	for _, name := range []string{"first", "second"} {
		if err := env.Client.Create(ctx, newShim(name, name, "1", map[string]string{"runtimes": "both"})); err != nil {
			t.Fatal(err)
		}
	}
	tainted := func(name string) (*corev1.Node, bool) {
		n := &corev1.Node{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			t.Fatal(err)
		}
		return n, slices.ContainsFunc(n.Spec.Taints, func(x corev1.Taint) bool { return x.Key == operator.PendingTaint })
	}
	waitFor(t, 60*time.Second, "the taint removed", func() (bool, string) {
		n, has := tainted("tainted")
		if has {
			return false, "still tainted"
		}
		for _, s := range []string{"first", "second"} {
			if ok, _ := nodelabel.State(n, s); !ok {
				t.Fatalf("taint removed before %s was installed: %v", s, n.Labels)
			}
		}
		return true, ""
	})
	waitFor(t, 30*time.Second, "both Ready", func() (bool, string) {
		a, m1 := ready(env.Client, "first")()
		b, m2 := ready(env.Client, "second")()
		return a && b, m1 + m2
	})
	if _, has := tainted("unselected"); !has {
		t.Error("a node no Shim selects lost its taint")
	}
}

// TestDeclaredLabelIsNoInstall: an autoscaled node joins as a node pool
// declares it (a Karpenter NodePool's labels and startupTaints): the
// Shim's label already "installed", a hash copied from another node, the
// startup taint. The operator does not take the label as an install: it
// installs the node (a Job runs there) and only then lifts the taint.
func TestDeclaredLabelIsNoInstall(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	k := startKubelet(t, env, time.Second, nil)
	startOperator(t, env)
	shim := newShim("kata", "kata", "1", map[string]string{"pool": "kata"})
	if err := env.Client.Create(ctx, shim); err != nil {
		t.Fatal(err)
	}
	var hash string
	waitFor(t, 30*time.Second, "the Shim's spec hash", func() (bool, string) {
		s := &v1alpha1.Shim{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(shim), s); err != nil {
			return false, err.Error()
		}
		hash = s.Status.SpecHash
		return hash != "", "no spec hash yet"
	})
	node := &corev1.Node{}
	node.Name = "joined"
	node.Labels = map[string]string{"pool": "kata", nodelabel.Key("kata"): nodelabel.Installed}
	node.Annotations = map[string]string{nodelabel.Key("kata"): hash}
	node.Spec.Taints = []corev1.Taint{{Key: operator.PendingTaint, Effect: corev1.TaintEffectNoSchedule}}
	if err := env.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the taint lifted", func() (bool, string) {
		n := &corev1.Node{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), n); err != nil {
			return false, err.Error()
		}
		if slices.ContainsFunc(n.Spec.Taints, func(x corev1.Taint) bool { return x.Key == operator.PendingTaint }) {
			s := &v1alpha1.Shim{}
			_ = env.Client.Get(ctx, client.ObjectKeyFromObject(shim), s)
			return false, fmt.Sprintf("still tainted: %d Jobs finished; node %v %v; status %+v", k.finished.Load(), n.Labels, n.Annotations, s.Status)
		}
		if k.finished.Load() == 0 {
			t.Fatalf("the taint was lifted with no install run: %v %v", n.Labels, n.Annotations)
		}
		s := &v1alpha1.Shim{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(shim), s); err != nil {
			return false, err.Error()
		}
		if nodelabel.VerificationOf(n, "kata", s.UID) == nil {
			t.Errorf("installed without a record of the install: %v", n.Annotations)
		}
		return true, ""
	})
}
