package operator_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator"
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
