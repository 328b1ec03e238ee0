package operator_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/nodelabel"
)

// TestReimagedNodeInstalledAgain: a node reimaged in place (same name, a
// new machine ID, nothing of the shim on its fresh root) loses the shim's
// label at once, before its new install, so that no new pod of the
// RuntimeClass lands there; its old machine's records go; then it is
// installed again. The install recorded the machine it ran on.
func TestReimagedNodeInstalledAgain(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	for i := range 2 {
		info := linuxNode("amd64")
		info.MachineID = fmt.Sprintf("machine-%d-a", i)
		createNode(t, env.Client, fmt.Sprintf("n-%d", i), map[string]string{"wasm": "true"}, info)
	}
	// Each install takes 3s: the old machine's label must go before the
	// new install is done.
	startKubelet(t, env, 3*time.Second, func(*batchv1.Job) bool { return false })
	startOperator(t, env)
	if err := env.Client.Create(ctx, newShim("spin", "spin", "1", map[string]string{"wasm": "true"})); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "Ready", ready(env.Client, "spin"))
	node := &corev1.Node{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "n-1"}, node); err != nil {
		t.Fatal(err)
	}
	if v := nodelabel.VerificationOf(node, "spin", getShim(t, env.Client, "spin").UID); v == nil || v.Machine != "machine-1-a" {
		t.Fatalf("the install's record %+v does not name the machine", v)
	}

	// Reimaged: a new machine ID under the same name.
	node.Status.NodeInfo.MachineID = "machine-1-b"
	if err := env.Client.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitFor(t, 2500*time.Millisecond, "n-1 to lose the old machine's label before its new install", func() (bool, string) {
		_ = env.Client.Get(ctx, client.ObjectKey{Name: "n-1"}, node)
		_, labelled := node.Labels[nodelabel.Key("spin")]
		return !labelled, fmt.Sprint(node.Labels)
	})
	t.Logf("the old machine's label went after %v", time.Since(start).Round(time.Millisecond))
	waitFor(t, 30*time.Second, "n-1 installed again, on the new machine", func() (bool, string) {
		_ = env.Client.Get(ctx, client.ObjectKey{Name: "n-1"}, node)
		ok, _ := nodelabel.State(node, "spin")
		v := nodelabel.VerificationOf(node, "spin", getShim(t, env.Client, "spin").UID)
		return ok && v != nil && v.Machine == "machine-1-b", fmt.Sprint(node.Annotations)
	})
	waitFor(t, 30*time.Second, "Ready", ready(env.Client, "spin"))
	if n := nodesWith(t, env.Client, "spin"); len(n) != 2 {
		t.Errorf("installed on %v", n)
	}
}
