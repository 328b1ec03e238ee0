package operator_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/nodelabel"
)

// TestNodeLeavingIsFencedByTaint: a node that leaves the Shim's
// nodeSelector while a pod of its RuntimeClass runs there keeps the
// label the pod was admitted with (a restarted kubelet re-checks it) and
// is fenced by the Shim's NoSchedule taint instead; once the pod is gone
// the taint goes and the node is uninstalled, its label with it. The
// other node stays installed and untainted.
func TestNodeLeavingIsFencedByTaint(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	createNodes(t, env.Client, 2, map[string]string{"pool": "a"}, "f")
	startKubelet(t, env, 100*time.Millisecond, nil)
	startOperator(t, env)
	if err := env.Client.Create(ctx, newShim("fe", "fe", "2", map[string]string{"pool": "a"})); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "Ready", ready(env.Client, "fe"))
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}
	workloadPod(t, env, "web", "f-0001", "fe-rc", running)
	relabel(t, env.Client, "f-0001", "pool", "b")

	fence := fenceTaint("fe")
	waitFor(t, 30*time.Second, "f-0001 fenced", func() (bool, string) {
		n := getNode(t, env.Client, "f-0001")
		return hasTaint(n, fence), fmt.Sprintf("taints %v, label %q", n.Spec.Taints, n.Labels[nodelabel.Key("fe")])
	})
	time.Sleep(2 * time.Second) // a few reconciles later: held, labelled as the pod was admitted
	if n := getNode(t, env.Client, "f-0001"); n.Labels[nodelabel.Key("fe")] != nodelabel.Installed {
		t.Errorf("f-0001's label while its pod runs: %q, want %s", n.Labels[nodelabel.Key("fe")], nodelabel.Installed)
	}
	if err := env.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "f-0001 uninstalled, unfenced", func() (bool, string) {
		n := getNode(t, env.Client, "f-0001")
		_, labelled := n.Labels[nodelabel.Key("fe")]
		return !labelled && !hasTaint(n, fence), fmt.Sprintf("taints %v, labels %v", n.Spec.Taints, n.Labels)
	})
	if n := getNode(t, env.Client, "f-0000"); n.Labels[nodelabel.Key("fe")] != nodelabel.Installed || hasTaint(n, fence) {
		t.Errorf("f-0000: label %q, taints %v; want installed, no fence", n.Labels[nodelabel.Key("fe")], n.Spec.Taints)
	}
}

// fenceTaint is the fence taint of shim as the docs state it.
func fenceTaint(shim string) corev1.Taint {
	return corev1.Taint{Key: nodelabel.Key(shim), Value: "fenced", Effect: corev1.TaintEffectNoSchedule}
}

func hasTaint(n *corev1.Node, taint corev1.Taint) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.MatchTaint(&taint) && t.Value == taint.Value })
}

// relabel sets the node's label key to value.
func relabel(t *testing.T, c client.Client, name, key, value string) {
	t.Helper()
	n := getNode(t, c, name)
	patch := client.MergeFrom(n.DeepCopy())
	n.Labels[key] = value
	if err := c.Patch(context.Background(), n, patch); err != nil {
		t.Fatal(err)
	}
}
