package operator_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestNodeEligibility: of the nodes the selector matches, only Linux nodes
// running containerd, of a platform the Shim has an artifact for, are
// installed; the others are skipped, not failed, and the status says how
// many and why. A node whose runtime becomes containerd is installed.
func TestNodeEligibility(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	windows := corev1.NodeSystemInfo{OperatingSystem: "windows", Architecture: "amd64", ContainerRuntimeVersion: "containerd://1.7.20"}
	crio := linuxNode("amd64")
	crio.ContainerRuntimeVersion = "cri-o://1.31.0"
	docker := linuxNode("amd64")
	docker.ContainerRuntimeVersion = "docker://27.3.1"
	talos := linuxNode("amd64")
	talos.OSImage = "Talos (v1.9.5)"
	bottlerocket := linuxNode("amd64")
	bottlerocket.OSImage = "Bottlerocket OS 1.26.0 (aws-k8s-1.31)"
	for _, n := range []struct {
		name   string
		labels map[string]string
		info   corev1.NodeSystemInfo
	}{
		{"linux", map[string]string{corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64"}, linuxNode("amd64")},
		{"k3s", map[string]string{corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64"}, corev1.NodeSystemInfo{OperatingSystem: "linux", Architecture: "amd64", ContainerRuntimeVersion: "containerd://1.7.22-k3s1"}},
		{"not-reported", map[string]string{corev1.LabelArchStable: "amd64"}, corev1.NodeSystemInfo{}}, // no OS or runtime reported yet: nothing rules it out
		{"win-label", map[string]string{corev1.LabelOSStable: "windows", corev1.LabelArchStable: "amd64"}, windows},
		{"win-info", nil, windows},
		{"crio", map[string]string{corev1.LabelArchStable: "amd64"}, crio},
		{"docker", nil, docker},
		{"riscv", map[string]string{corev1.LabelOSStable: "linux", corev1.LabelArchStable: "riscv64"}, linuxNode("riscv64")},
		{"talos", map[string]string{corev1.LabelArchStable: "amd64"}, talos},
		{"bottlerocket", map[string]string{corev1.LabelArchStable: "amd64"}, bottlerocket},
	} {
		createNode(t, env.Client, n.name, n.labels, n.info)
	}
	startKubelet(t, env, 50*time.Millisecond, nil)
	startOperator(t, env)
	shim := newShim("eligible", "eligible", "100%", nil)
	shim.Spec.FetchStrategy.AnonHTTP = &v1alpha1.AnonHTTPFetch{Platforms: []v1alpha1.PlatformArtifact{
		{Platform: "linux/amd64", Location: "https://artifacts.invalid/eligible-amd64.tgz", SHA256: strings.Repeat("a", 64)},
		{Platform: "linux/arm64", Location: "https://artifacts.invalid/eligible-arm64.tgz", SHA256: strings.Repeat("b", 64)},
	}}
	if err := env.Client.Create(ctx, shim); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "Ready", ready(env.Client, "eligible"))

	s := getShim(t, env.Client, "eligible")
	if s.Status.Nodes != 3 || s.Status.UpdatedNodes != 3 || s.Status.FailedNodes != 0 || s.Status.SkippedNodes != 7 {
		t.Errorf("counts: nodes %d, updated %d, failed %d, skipped %d; want 3, 3, 0, 7", s.Status.Nodes, s.Status.UpdatedNodes, s.Status.FailedNodes, s.Status.SkippedNodes)
	}
	want := []v1alpha1.SkippedNodes{
		{Reason: v1alpha1.SkipImmutableOS, Count: 2, Nodes: []string{"bottlerocket", "talos"}},
		{Reason: v1alpha1.SkipNoArtifact, Count: 1, Nodes: []string{"riscv"}},
		{Reason: v1alpha1.SkipNotLinux, Count: 2, Nodes: []string{"win-info", "win-label"}},
		{Reason: v1alpha1.SkipRuntimeNotSupported, Count: 2, Nodes: []string{"crio", "docker"}},
	}
	if fmt.Sprint(s.Status.Skipped) != fmt.Sprint(want) {
		t.Errorf("skipped %+v, want %+v", s.Status.Skipped, want)
	}
	c := condition(s, v1alpha1.ConditionReady)
	for _, part := range []string{"3 of 3 nodes", "7 nodes skipped", "talos: Talos (v1.9.5)", "NoArtifact 1 (riscv: linux/riscv64)", "crio: cri-o://1.31.0; the Shim runs on containerd", "win-info: windows",
		decide.SkipHint(v1alpha1.SkipRuntimeNotSupported),
		"talos: Talos (v1.9.5)): " + decide.SkipHint(v1alpha1.SkipImmutableOS), "spec.preinstalledOn"} {
		if !strings.Contains(c.Message, part) {
			t.Errorf("Ready message lacks %q: %s", part, c.Message)
		}
	}
	installed := nodesWith(t, env.Client, "eligible")
	for _, n := range []string{"linux", "k3s", "not-reported"} {
		if _, ok := installed[n]; !ok {
			t.Errorf("eligible node %s not installed", n)
		}
	}
	if len(installed) != 3 {
		t.Errorf("installed on %v", installed)
	}
	for _, j := range jobsOf(t, env.Client, "eligible") {
		if n := j.Spec.Template.Spec.NodeName; !slices.Contains([]string{"linux", "k3s", "not-reported"}, n) {
			t.Errorf("a Job for the skipped node %s", n)
		}
	}

	// CRI-O is replaced by containerd: the node is installed.
	node := &corev1.Node{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "crio"}, node); err != nil {
		t.Fatal(err)
	}
	node.Status.NodeInfo.ContainerRuntimeVersion = "containerd://2.2.9"
	if err := env.Client.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the former CRI-O node installed", func() (bool, string) {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "crio"}, node); err != nil {
			return false, err.Error()
		}
		ok, _ := nodelabel.State(node, "eligible")
		s := getShim(t, env.Client, "eligible")
		return ok && s.Status.SkippedNodes == 6 && s.Status.UpdatedNodes == 4, fmt.Sprintf("%+v", s.Status)
	})
}

// TestReadOnlyHostSkipped: a node whose installer finds a directory it
// writes read-only (and changes nothing) is skipped, not failed: the
// rollout goes on to the other nodes and the Shim is Ready, the status
// naming the node and the directory under ReadOnlyHost; the next spec
// tries the node again.
func TestReadOnlyHostSkipped(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	createNodes(t, env.Client, 3, nil, "n")
	var tries atomic.Int32
	startPodKubelet(t, env, 50*time.Millisecond, func(_ context.Context, j *batchv1.Job) testutil.PodRun {
		if j.Spec.Template.Spec.NodeName == "n-0001" {
			tries.Add(1)
			r := failedResult("n-0001", plan.Failed, plan.ReasonReadOnlyHost, "read-only host: the bundle root /opt/shimkit is on a read-only filesystem (at /opt)")
			r.Shim.Name = "rohost"
			return testutil.ResultRun(t, plan.ExitRefused, r)
		}
		return testutil.ResultRun(t, 0, &plan.NodeResult{APIVersion: plan.APIVersion, Kind: plan.KindNodeResult, Outcome: plan.Succeeded, Digest: "sha256:" + strings.Repeat("a", 64)})
	})
	startOperator(t, env)
	if err := env.Client.Create(ctx, newShim("rohost", "rohost", "1", nil)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "Ready with the read-only node skipped", func() (bool, string) {
		ok, msg := ready(env.Client, "rohost")()
		s := getShim(t, env.Client, "rohost")
		return ok && s.Status.SkippedNodes == 1 && s.Status.UpdatedNodes == 2 && s.Status.FailedNodes == 0, msg
	})
	s := getShim(t, env.Client, "rohost")
	if want := []v1alpha1.SkippedNodes{{Reason: v1alpha1.SkipReadOnlyHost, Count: 1, Nodes: []string{"n-0001"}}}; fmt.Sprint(s.Status.Skipped) != fmt.Sprint(want) {
		t.Errorf("skipped %+v, want %+v", s.Status.Skipped, want)
	}
	if c := condition(s, v1alpha1.ConditionReady); !strings.Contains(c.Message, "n-0001: read-only host: the bundle root /opt/shimkit") {
		t.Errorf("Ready message does not name the directory: %s", c.Message)
	} else if hint := "(at /opt)): " + decide.SkipHint(v1alpha1.SkipReadOnlyHost); !strings.Contains(c.Message, hint) || !strings.Contains(hint, "spec.preinstalledOn") || !strings.Contains(hint, "--bundle-root") {
		t.Errorf("Ready message lacks the hint %q: %s", hint, c.Message)
	}
	if condition(s, v1alpha1.ConditionDegraded).Status != metav1.ConditionFalse {
		t.Errorf("Degraded: %+v", condition(s, v1alpha1.ConditionDegraded))
	}
	// The next spec: tried again (once), skipped again.
	before := tries.Load()
	updateShim(t, env.Client, "rohost", func(s *v1alpha1.Shim) {
		s.Spec.FetchStrategy.AnonHTTP.Location = "https://artifacts.invalid/rohost-v2.tar.gz"
	})
	waitFor(t, 30*time.Second, "the next spec rolled out, the node tried again", func() (bool, string) {
		ok, msg := ready(env.Client, "rohost")()
		return ok && tries.Load() == before+1, msg
	})
}
