package operator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestPreinstalledFetchType: a Shim of fetchStrategy.type preinstalled
// (every matching node's image has the shim) fetches and pins nothing
// (status.artifact stays empty) and runs no installer Job: a node is
// labelled once its kubelet reports the handler in
// node.status.runtimeHandlers, an immutable OS (Talos) included, one that
// reports none is skipped (HandlerNotReported) until it does, and one
// that stops listing the handler is unlabelled. The RuntimeClass is
// published once a node has it, and deleting the Shim unlabels the nodes
// and deletes it, all without a Job.
func TestPreinstalledFetchType(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	talos := linuxNode("amd64")
	talos.OSImage = "Talos (v1.9.5)"
	createNode(t, env.Client, "img-0", nil, linuxNode("amd64"))
	createNode(t, env.Client, "img-talos", nil, talos)
	createNode(t, env.Client, "img-none", nil, linuxNode("amd64"))
	setHandlers(t, env.Client, "img-0", "spin")
	setHandlers(t, env.Client, "img-talos", "spin")
	startKubelet(t, env, 50*time.Millisecond, func(*batchv1.Job) bool { return false })
	startOperator(t, env)
	shim := newShim("spin", "spin", "1", nil)
	shim.Spec.FetchStrategy = v1alpha1.FetchStrategy{Type: v1alpha1.FetchPreinstalled}
	if err := env.Client.Create(ctx, shim); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "Ready on the two nodes that report spin, img-none skipped", func() (bool, string) {
		ok, msg := ready(env.Client, "spin")()
		s := getShim(t, env.Client, "spin")
		return ok && s.Status.Nodes == 2 && s.Status.UpdatedNodes == 2 && s.Status.SkippedNodes == 1, msg
	})
	if got := nodesWith(t, env.Client, "spin"); len(got) != 2 || got["img-0"] == "" || got["img-talos"] == "" {
		t.Errorf("labelled %v, want img-0 and img-talos", got)
	}
	s := getShim(t, env.Client, "spin")
	if want := []v1alpha1.SkippedNodes{{Reason: v1alpha1.SkipHandlerNotReported, Count: 1, Nodes: []string{"img-none"}}}; fmt.Sprint(s.Status.Skipped) != fmt.Sprint(want) {
		t.Errorf("skipped %+v, want %+v", s.Status.Skipped, want)
	}
	if s.Status.Artifact != nil {
		t.Errorf("status.artifact %+v: a preinstalled Shim pins nothing", s.Status.Artifact)
	}
	if s.Status.FailedNodes != 0 {
		t.Errorf("failed nodes: %+v", s.Status.FailingNodes)
	}
	if rc := getRuntimeClass(t, env.Client, "spin-rc"); rc.Handler != "spin" {
		t.Errorf("RuntimeClass spin-rc has handler %q", rc.Handler)
	}
	assertNoJobs(t, env.Client, "spin")

	// img-none's kubelet reports the handler now: labelled.
	setHandlers(t, env.Client, "img-none", "spin")
	waitLabelled(t, env.Client, "img-none", true)
	// img-0 stops listing it (its image lost the runtime): unlabelled.
	setHandlers(t, env.Client, "img-0", "other")
	waitLabelled(t, env.Client, "img-0", false)
	waitFor(t, 30*time.Second, "the status to count img-0 skipped", func() (bool, string) {
		s := getShim(t, env.Client, "spin")
		return s.Status.UpdatedNodes == 2 && s.Status.SkippedNodes == 1 && len(s.Status.Skipped) == 1 && fmt.Sprint(s.Status.Skipped[0].Nodes) == "[img-0]", fmt.Sprintf("%+v", s.Status)
	})
	if s := getShim(t, env.Client, "spin"); s.Status.Artifact != nil {
		t.Errorf("status.artifact %+v", s.Status.Artifact)
	}
	assertNoJobs(t, env.Client, "spin")
	// No installer runs, so no canary: no canary RuntimeClass either.
	if err := env.Client.Get(ctx, client.ObjectKey{Name: operator.CanaryRuntimeClass("spin")}, &nodev1.RuntimeClass{}); !apierrors.IsNotFound(err) {
		t.Errorf("RuntimeClass %s of a preinstalled Shim: %v, want none", operator.CanaryRuntimeClass("spin"), err)
	}

	// Every node stops listing it: the Shim is in the state of a new Shim
	// that no node can run, and says what such a Shim says (it was Ready
	// "0 of 0 nodes"); its RuntimeClass stays, for the pods asking for it
	// to pend until a node serves the handler again.
	setHandlers(t, env.Client, "img-none", "other")
	setHandlers(t, env.Client, "img-talos", "other")
	fresh := newShim("spin2", "spin", "1", nil)
	fresh.Spec.RuntimeClass.Name = "spin2-rc"
	fresh.Spec.FetchStrategy = v1alpha1.FetchStrategy{Type: v1alpha1.FetchPreinstalled}
	if err := env.Client.Create(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"spin", "spin2"} {
		waitReason(t, env, name, v1alpha1.ConditionReady, v1alpha1.ReasonNoNodes)
	}
	waitFor(t, 30*time.Second, "the same conditions for the same state", func() (bool, string) {
		a, b := conditionsOf(getShim(t, env.Client, "spin")), conditionsOf(getShim(t, env.Client, "spin2"))
		return a == b, "spin: " + a + "\nspin2: " + b
	})
	getRuntimeClass(t, env.Client, "spin-rc")
	if err := env.Client.Delete(ctx, getShim(t, env.Client, "spin2")); err != nil {
		t.Fatal(err)
	}

	if err := env.Client.Delete(ctx, getShim(t, env.Client, "spin")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the Shim gone", func() (bool, string) {
		err := env.Client.Get(ctx, client.ObjectKey{Name: "spin"}, &v1alpha1.Shim{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if got := nodesWith(t, env.Client, "spin"); len(got) != 0 {
		t.Errorf("labelled after the deletion: %v", got)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "spin-rc"}, &nodev1.RuntimeClass{}); !apierrors.IsNotFound(err) {
		t.Errorf("RuntimeClass spin-rc after the deletion: %v", err)
	}
	assertNoJobs(t, env.Client, "spin")
}

// assertNoJobs checks that no Job of the Shim was made.
func assertNoJobs(t *testing.T, c client.Client, shim string) {
	t.Helper()
	for _, j := range jobsOf(t, c, shim) {
		t.Errorf("Job %s (%s) on %s: a preinstalled Shim runs none", j.Name, j.Labels["shim.containerd.x-k8s.io/op"], j.Spec.Template.Spec.NodeName)
	}
}

// conditionsOf is a Shim's conditions as type=status/reason: message.
func conditionsOf(s *v1alpha1.Shim) string {
	var b strings.Builder
	for _, c := range s.Status.Conditions {
		fmt.Fprintf(&b, "%s=%s/%s: %s; ", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}
