package operator_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestMixedFleet: one Shim rolls out over a fleet that mixes containerd
// and CRI-O nodes under one maxUpdate, each node's plan naming its
// runtime (its kubelet's), so that its installer writes that runtime's
// config; a Shim of a containerd shim v2 skips the CRI-O nodes,
// RuntimeNotSupported, with its hint, and fails none.
func TestMixedFleet(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	runtimes := map[string]string{"cd-1": "containerd://2.1.4", "cd-2": "containerd://1.7.35", "crio-1": "cri-o://1.34.0", "crio-2": "cri-o://1.34.0"}
	for name, rt := range runtimes {
		info := linuxNode("amd64")
		info.ContainerRuntimeVersion = rt
		createNode(t, env.Client, name, map[string]string{corev1.LabelArchStable: "amd64"}, info)
	}
	k := startKubelet(t, env, 50*time.Millisecond, nil)
	startOperator(t, env)

	// crun as an OCI runtime through containerd's runc shim: both runtimes
	// by default.
	crun := newShim("mixed-crun", "crun", "1", nil)
	crun.Spec.RuntimeType = "io.containerd.runc.v2"
	crun.Spec.RuntimeOptions = &runtime.RawExtension{Raw: []byte(`{"BinaryName":"$(BUNDLE_DIR)/crun"}`)}
	spin := newShim("mixed-spin", "spin", "2", nil)
	for _, s := range []*v1alpha1.Shim{crun, spin} {
		if err := env.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 60*time.Second, "both Ready", func() (bool, string) {
		a, b := getShim(t, env.Client, "mixed-crun"), getShim(t, env.Client, "mixed-spin")
		okA, _ := ready(env.Client, "mixed-crun")()
		okB, _ := ready(env.Client, "mixed-spin")()
		return okA && okB && a.Status.UpdatedNodes == 4 && b.Status.UpdatedNodes == 2, fmt.Sprintf("crun %+v; spin %+v", a.Status, b.Status)
	})
	if n := k.maxRunning("mixed-crun"); n != 1 {
		t.Errorf("%d crun Jobs at once, want 1 (maxUpdate, across runtimes)", n)
	}
	for _, j := range jobsOf(t, env.Client, "mixed-crun") {
		plans, err := plan.DecodePlans([]byte(j.Spec.Template.Annotations[operator.PlanAnnotation])) // a batch when spin's joined
		if err != nil {
			t.Fatal(err)
		}
		node := j.Spec.Template.Spec.NodeName
		want := map[bool]string{true: plan.RuntimeCRIO, false: plan.RuntimeContainerd}[runtimes[node] == "cri-o://1.34.0"]
		for _, p := range plans {
			if p.Runtime != want {
				t.Errorf("the plan of %s for %s names runtime %q, want %q", p.Shim.Name, node, p.Runtime, want)
			}
		}
	}
	s := getShim(t, env.Client, "mixed-spin")
	if want := []v1alpha1.SkippedNodes{{Reason: v1alpha1.SkipRuntimeNotSupported, Count: 2, Nodes: []string{"crio-1", "crio-2"}}}; fmt.Sprint(s.Status.Skipped) != fmt.Sprint(want) || s.Status.FailedNodes != 0 {
		t.Errorf("spin skipped %+v, failed %d; want %+v, none failed", s.Status.Skipped, s.Status.FailedNodes, want)
	}
	for _, j := range jobsOf(t, env.Client, "mixed-spin") {
		if n := j.Spec.Template.Spec.NodeName; runtimes[n] != "containerd://2.1.4" && runtimes[n] != "containerd://1.7.35" {
			t.Errorf("a spin Job on the CRI-O node %s", n)
		}
	}
}
