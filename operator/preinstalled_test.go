package operator_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// bakedLabel is the label a node image with the runtime sets, in the test.
const bakedLabel = "image.example.com/wasm"

// TestPreinstalledMixedFleet: one Shim over a mixed fleet. A node whose
// image has the runtime (bakedLabel) is labelled without a Job once its
// kubelet reports the handler; one whose kubelet does not is skipped
// (HandlerNotReported) until it does; a node without it is installed by
// a Job. A baked node that stops reporting the handler is unlabelled, and
// deleting the Shim unlabels the baked nodes without a Job, the installed
// one with its uninstall Job.
func TestPreinstalledMixedFleet(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	createNode(t, env.Client, "baked-0", map[string]string{bakedLabel: "yes"}, linuxNode("amd64"))
	createNode(t, env.Client, "baked-1", map[string]string{bakedLabel: "yes"}, linuxNode("amd64"))
	createNode(t, env.Client, "plain-0", nil, linuxNode("amd64"))
	setHandlers(t, env.Client, "baked-0", "spin")
	startKubelet(t, env, 50*time.Millisecond, func(*batchv1.Job) bool { return false })
	startOperator(t, env)
	shim := newShim("spin", "spin", "3", nil)
	shim.Spec.PreinstalledOn = map[string]string{bakedLabel: "yes"}
	if err := env.Client.Create(ctx, shim); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "Ready with baked-1 skipped", func() (bool, string) {
		ok, msg := ready(env.Client, "spin")()
		s := getShim(t, env.Client, "spin")
		return ok && s.Status.UpdatedNodes == 2 && s.Status.SkippedNodes == 1, msg
	})
	if got := nodesWith(t, env.Client, "spin"); len(got) != 2 || got["baked-0"] == "" || got["plain-0"] == "" {
		t.Errorf("labelled %v, want baked-0 and plain-0", got)
	}
	if s := getShim(t, env.Client, "spin"); len(s.Status.Skipped) != 1 || s.Status.Skipped[0].Reason != v1alpha1.SkipHandlerNotReported {
		t.Errorf("skipped %+v", s.Status.Skipped)
	}
	assertJobs(t, env, "spin", "plain-0")

	// baked-1's kubelet reports the handler now: labelled, still no Job.
	setHandlers(t, env.Client, "baked-1", "spin")
	waitLabelled(t, env.Client, "baked-1", true)
	// baked-0's image lost it: unlabelled, no Job.
	setHandlers(t, env.Client, "baked-0", "other")
	waitLabelled(t, env.Client, "baked-0", false)
	assertJobs(t, env, "spin", "plain-0")

	if err := env.Client.Delete(ctx, getShim(t, env.Client, "spin")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the Shim gone", func() (bool, string) {
		err := env.Client.Get(ctx, client.ObjectKey{Name: "spin"}, &v1alpha1.Shim{})
		return err != nil, fmt.Sprint(err)
	})
	if got := nodesWith(t, env.Client, "spin"); len(got) != 0 {
		t.Errorf("labelled after the deletion: %v", got)
	}
	assertJobs(t, env, "spin", "plain-0")
}

// setHandlers sets the runtime handlers the node's kubelet reports.
func setHandlers(t *testing.T, c client.Client, name string, handlers ...string) {
	t.Helper()
	node := &corev1.Node{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, node); err != nil {
		t.Fatal(err)
	}
	node.Status.RuntimeHandlers = nil
	for _, h := range append([]string{"runc"}, handlers...) {
		node.Status.RuntimeHandlers = append(node.Status.RuntimeHandlers, corev1.NodeRuntimeHandler{Name: h})
	}
	if err := c.Status().Update(context.Background(), node); err != nil {
		t.Fatal(err)
	}
}

func waitLabelled(t *testing.T, c client.Client, name string, want bool) {
	t.Helper()
	waitFor(t, 30*time.Second, fmt.Sprintf("%s labelled %v", name, want), func() (bool, string) {
		node := &corev1.Node{}
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, node); err != nil {
			return false, err.Error()
		}
		ok, _ := nodelabel.State(node, "spin")
		return ok == want, fmt.Sprint(node.Labels)
	})
}

// assertJobs checks that the Shim's installer Jobs ran on the node only.
func assertJobs(t *testing.T, env *testutil.Env, shim, node string) {
	t.Helper()
	for _, j := range jobsOf(t, env.Client, shim) {
		if n := j.Spec.Template.Spec.NodeName; n != node {
			t.Errorf("Job %s on %s: only %s gets the shim from a Job", j.Name, n, node)
		}
	}
}
