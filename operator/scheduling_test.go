package operator_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestSchedulingLabel: a Shim with spec.schedulingLabel (a label of the
// admin's domain, as Karpenter's NodePool admits) publishes RuntimeClasses
// that select it, and the operator writes it with the Shim's own label.
// A node that joins with it declared (and the startup taint) is installed
// like any other node, and untainted only then. A second Shim with the
// same label is refused (InvalidSpec, naming the first) and runs nothing,
// until the first is gone; the first's deletion takes the label off.
func TestSchedulingLabel(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	const key = "example.com/wasm"
	pool := map[string]string{"pool": "wasm"}
	createNodes(t, env.Client, 2, pool, "n")
	k := startKubelet(t, env, 100*time.Millisecond, nil)
	startOperator(t, env)
	first := newShim("wasm", "wasmtime", "2", pool)
	first.Spec.SchedulingLabel = key
	if err := env.Client.Create(ctx, first); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "Ready", ready(env.Client, "wasm"))
	time.Sleep(time.Second) // the second Shim is created a second later: the first is the older
	second := newShim("wasm-too", "wasmtime2", "2", pool)
	second.Spec.SchedulingLabel = key
	if err := env.Client.Create(ctx, second); err != nil {
		t.Fatal(err)
	}

	joined := &corev1.Node{}
	joined.Name = "joined"
	joined.Labels = map[string]string{"pool": "wasm", key: nodelabel.Installed} // declared by the node pool
	joined.Spec.Taints = []corev1.Taint{{Key: operator.PendingTaint, Effect: corev1.TaintEffectNoSchedule}}
	if err := env.Client.Create(ctx, joined); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the joined node installed and untainted", func() (bool, string) {
		n := &corev1.Node{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(joined), n); err != nil {
			return false, err.Error()
		}
		tainted := slices.ContainsFunc(n.Spec.Taints, func(x corev1.Taint) bool { return x.Key == operator.PendingTaint })
		installed, _ := nodelabel.State(n, "wasm")
		if !tainted && !installed {
			t.Fatalf("the taint was lifted before the install: %v", n.Labels)
		}
		return !tainted && installed, fmt.Sprintf("tainted %v, labels %v", tainted, n.Labels)
	})
	var nodes corev1.NodeList
	if err := env.Client.List(ctx, &nodes); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if installed, _ := nodelabel.State(&n, "wasm"); !installed || n.Labels[key] != nodelabel.Installed {
			t.Errorf("node %s: labels %v, want %s and %s installed", n.Name, n.Labels, nodelabel.Key("wasm"), key)
		}
	}
	rc := &nodev1.RuntimeClass{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "wasmtime-rc"}, rc); err != nil {
		t.Fatal(err)
	}
	if rc.Scheduling == nil || len(rc.Scheduling.NodeSelector) != 1 || rc.Scheduling.NodeSelector[key] != nodelabel.Installed {
		t.Errorf("the RuntimeClass's scheduling: %+v, want %s=installed alone", rc.Scheduling, key)
	}

	waitFor(t, 30*time.Second, "the second Shim refused", func() (bool, string) {
		c := meta.FindStatusCondition(getShim(t, env.Client, "wasm-too").Status.Conditions, v1alpha1.ConditionDegraded)
		return c != nil && c.Reason == v1alpha1.ReasonInvalidSpec && strings.Contains(c.Message, "spec.schedulingLabel: "+key+" is the scheduling label of Shim wasm,"), fmt.Sprintf("Degraded: %+v", c)
	})
	if jobs := jobsOf(t, env.Client, "wasm-too"); len(jobs) != 0 {
		t.Errorf("the refused Shim ran %d Jobs", len(jobs))
	}

	if err := env.Client.Delete(ctx, getShim(t, env.Client, "wasm")); err != nil {
		t.Fatal(err)
	}
	// The first Shim's uninstall takes its labels off; the second, now
	// the label's only Shim, installs every node and writes it again.
	waitFor(t, 60*time.Second, "the second Shim Ready", ready(env.Client, "wasm-too"))
	if err := env.Client.List(ctx, &nodes); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if _, ok := n.Labels[nodelabel.Key("wasm")]; ok {
			t.Errorf("node %s keeps the deleted Shim's label: %v", n.Name, n.Labels)
		}
		if installed, _ := nodelabel.State(&n, "wasm-too"); !installed || n.Labels[key] != nodelabel.Installed {
			t.Errorf("node %s: labels %v, want %s and %s installed", n.Name, n.Labels, nodelabel.Key("wasm-too"), key)
		}
	}
	if uninstalls := k.finished.Load(); uninstalls < 9 { // 3 installs, 3 uninstalls, 3 installs
		t.Errorf("%d installer Jobs finished, want 9", uninstalls)
	}
}
