package operator_test

import (
	"context"
	"testing"
	"time"

	"github.com/shimkit/shimkit/operator"
)

// TestOneInstallerPerNode: two Shims rolled out together onto the same
// nodes, each allowed every node at once (maxUpdate 100%), never run two
// installers on one node at a time, and with the operator-wide cap never
// more than that many nodes at once; both roll out completely.
func TestOneInstallerPerNode(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	createNodes(t, env.Client, 4, map[string]string{"gate": "true"}, "gate")
	k := startKubelet(t, env, 400*time.Millisecond, nil)
	startOperatorWith(t, env, env.Config, func(o *operator.Options) { o.MaxRestartingNodes = 3 })
	for _, name := range []string{"alpha", "beta"} {
		if err := env.Client.Create(ctx, newShim(name, name, "100%", map[string]string{"gate": "true"})); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 60*time.Second, "alpha Ready", ready(env.Client, "alpha"))
	waitFor(t, 60*time.Second, "beta Ready", ready(env.Client, "beta"))
	k.mu.Lock()
	defer k.mu.Unlock()
	for node, n := range k.maxNode {
		if n > 1 {
			t.Errorf("node %s ran %d installers at once", node, n)
		}
	}
	if k.maxTotal > 3 || k.maxTotal < 2 {
		t.Errorf("%d installers ran at once, want 2 or 3 (cap 3)", k.maxTotal)
	}
	for _, name := range []string{"alpha", "beta"} {
		if got := len(nodesWith(t, env.Client, name)); got != 4 {
			t.Errorf("%s on %d nodes, want 4", name, got)
		}
	}
}
