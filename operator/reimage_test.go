package operator_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/nodelabel"
)

// TestReimagedNodeInstalledAgain: a node reimaged in place (same name, a
// new machine ID, nothing of the shim on its fresh root) loses the shim's
// label at once, before its new install, so that no new pod of the
// RuntimeClass lands there; its old machine's records go; then it is
// installed again, by a Job of the new machine: the old machine's Job of
// the same name (the spec is the same), finished but held in the API
// here, as a slow cache would show it, is not taken for the new
// machine's. The install recorded the machine it ran on.
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

	// The old machine's install Job stays in the API once deleted, until
	// the finalizer goes.
	const hold = "shimkit.test/hold"
	old := installJobOf(t, env.Client, "n-1")
	old.Finalizers = append(old.Finalizers, hold)
	if err := env.Client.Update(ctx, old); err != nil {
		t.Fatal(err)
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
	waitFor(t, 30*time.Second, "the old machine's Job deleted to make room for the new one's", func() (bool, string) {
		j := installJobOf(t, env.Client, "n-1")
		return j.UID == old.UID && j.DeletionTimestamp != nil, fmt.Sprint(j.UID, j.DeletionTimestamp)
	})
	for range 8 {
		time.Sleep(250 * time.Millisecond)
		_ = env.Client.Get(ctx, client.ObjectKey{Name: "n-1"}, node)
		if ok, _ := nodelabel.State(node, "spin"); ok {
			t.Fatalf("n-1 labelled from the old machine's Job %s", old.Name)
		}
	}
	old = installJobOf(t, env.Client, "n-1")
	old.Finalizers = nil
	if err := env.Client.Update(ctx, old); err != nil {
		t.Fatal(err)
	}
	// (About 4 s here; one full make test of session 14, under load, did
	// not see it within 30 s, a stall not reproduced in 9 runs alone or
	// beside six busy loops: given more time, so that a slow recovery
	// passes and a lost one still fails.)
	relabel := time.Now()
	waitFor(t, 90*time.Second, "n-1 labelled again", func() (bool, string) {
		_ = env.Client.Get(ctx, client.ObjectKey{Name: "n-1"}, node)
		ok, _ := nodelabel.State(node, "spin")
		return ok, fmt.Sprint(node.Labels)
	})
	if d := time.Since(relabel); d > 20*time.Second {
		t.Logf("n-1 labelled again only %v after the old machine's Job went", d.Round(time.Second))
	}
	// Labelled for what a Job made for the new machine did: the old
	// machine's was gone by then.
	jobs := &batchv1.JobList{}
	if err := env.Client.List(ctx, jobs, client.MatchingLabels{jobview.LabelNode: "n-1", jobview.LabelOp: jobview.OpInstall}); err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs.Items {
		if m := j.Annotations[jobview.AnnotationMachine]; m != "machine-1-b" {
			t.Errorf("n-1 labelled again while Job %s (%s) of machine %q was there", j.Name, j.UID, m)
		}
	}
	if len(jobs.Items) == 0 {
		t.Error("n-1 labelled again without an install Job")
	}
	if v := nodelabel.VerificationOf(node, "spin", getShim(t, env.Client, "spin").UID); v == nil || v.Machine != "machine-1-b" {
		t.Errorf("the new install's record %+v does not name the new machine", v)
	}
	waitFor(t, 30*time.Second, "Ready", ready(env.Client, "spin"))
	if n := nodesWith(t, env.Client, "spin"); len(n) != 2 {
		t.Errorf("installed on %v", n)
	}
}

// installJobOf is the node's install Job (the test's only one there).
func installJobOf(t *testing.T, c client.Client, node string) *batchv1.Job {
	t.Helper()
	jobs := &batchv1.JobList{}
	if err := c.List(context.Background(), jobs, client.MatchingLabels{jobview.LabelNode: node, jobview.LabelOp: jobview.OpInstall}); err != nil || len(jobs.Items) != 1 {
		t.Fatalf("install Jobs of %s: %d, %v", node, len(jobs.Items), err)
	}
	return &jobs.Items[0]
}
