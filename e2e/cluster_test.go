package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/shimkit/shimkit/internal/imagebuild"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestCluster runs every end-to-end scenario on one real three-node
// cluster, one after another, each leaving the cluster as it found it:
// booting the cluster and building the images once keeps the suite's
// time down. The scenarios on a single Shim run on the first node; the
// rollout scenarios use all of them.
func TestCluster(t *testing.T) {
	build := testutil.ContainerdMatrix(t)[2]
	c := testutil.StartClusterWith(t, testutil.ClusterOptions{Containerd: build, Nodes: 3, AddToScheme: []func(*runtime.Scheme) error{v1alpha1.AddToScheme}})
	dumpOnFailure(t, c)
	images := loadImages(t, c)
	overlay := deployOperator(t, c)

	// Each scenario deletes its Shims; after a failure, what is left goes
	// here, so that the next one starts clean.
	// Progressive delivery on the three nodes, the mixed fleet on five
	// nodes of its own, Shims as images on two more, the operator's own
	// lifecycle, a refused Shim and gVisor on one each, at once: none
	// touches another's nodes or Shims,
	// and they mostly wait (a maintenance window, node boots, pulls,
	// containerd restarts).
	base := slices.Clone(c.Nodes)
	t.Run("concurrent", func(t *testing.T) {
		t.Run("progressive", func(t *testing.T) { t.Parallel(); testProgressive(t, c, base, build) })
		t.Run("fleet", func(t *testing.T) { t.Parallel(); testFleet(t, c, images) })
		t.Run("images", func(t *testing.T) { t.Parallel(); testImages(t, c, images) })
		// The single-node scenarios of Shims of their own, each on a node
		// of its own.
		t.Run("refusal", func(t *testing.T) {
			t.Parallel()
			testRefusal(t, c, c.AddNode(t, testutil.JoinOptions{Images: images}), build)
		})
		t.Run("gvisor", func(t *testing.T) { t.Parallel(); testGVisor(t, c, c.AddNode(t, testutil.JoinOptions{Images: images})) })
		t.Run("operator", func(t *testing.T) {
			t.Parallel()
			testOperator(t, c, c.AddNode(t, testutil.JoinOptions{Images: images}), build)
		})
	})
	deleteShims(t, c)
	t.Run("nodes", func(t *testing.T) { testNodes(t, c, build, images) })
	deleteShims(t, c)

	undeployOperator(t, c, overlay)
	t.Run("chart", func(t *testing.T) { testChart(t, c, toolBinary(t, "HELM", "helm"), build) })
	t.Run("make", func(t *testing.T) {
		toolBinary(t, "", "kustomize") // the make targets' (not built inside the test)
		testMakeTargets(t, c)
	})
}

// deleteShims deletes every Shim and waits until they are gone.
func deleteShims(t *testing.T, c *testutil.Cluster) {
	t.Helper()
	ctx := context.Background()
	if err := c.Client.DeleteAllOf(ctx, &v1alpha1.Shim{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 180*time.Second, "every Shim gone", func() bool {
		l := &v1alpha1.ShimList{}
		return c.Client.List(ctx, l) == nil && len(l.Items) == 0
	})
}

// onNode selects the node only.
func onNode(n testutil.ClusterNode) map[string]string {
	return map[string]string{"kubernetes.io/hostname": n.Name}
}

// loadImages builds the operator and installer images without Docker,
// imports them into every node's containerd, and returns the image
// archives (for nodes that join later: JoinOptions.Images).
func loadImages(t *testing.T, c *testutil.Cluster) []string {
	t.Helper()
	dir := t.TempDir()
	var tars []string
	for _, img := range []struct{ cmd, ref, user string }{
		{"shimkit-operator", operatorImage, "65532"}, {"shimkit-installer", installerImage, ""},
	} {
		bin := testutil.GoBuild(t, "./cmd/"+img.cmd, filepath.Join(dir, img.cmd))
		tarPath := bin + ".tar"
		if err := imagebuild.Write(imagebuild.Image{Ref: img.ref, Binary: bin, Name: img.cmd, User: img.user}, tarPath); err != nil {
			t.Fatal(err)
		}
		tars = append(tars, tarPath)
	}
	for _, n := range c.Nodes {
		for _, tar := range tars {
			testutil.ImportImage(t, "/usr/bin/ctr", n.Socket(), tar)
		}
	}
	return tars
}

// dumpOnFailure logs the Shims, Jobs, pods, events and the shimkit pods'
// logs when the test failed.
func dumpOnFailure(t *testing.T, c *testutil.Cluster) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, args := range [][]string{
			{"get", "shims", "-o", "yaml"},
			{"-n", "shimkit-system", "get", "jobs,pods", "-o", "wide"},
			{"get", "events", "-A", "--sort-by=.lastTimestamp"},
		} {
			out, _ := exec.Command(c.Kubectl, append([]string{"--kubeconfig", c.Kubeconfig}, args...)...).CombinedOutput()
			t.Logf("kubectl %s:\n%s", strings.Join(args, " "), out)
		}
		for _, n := range c.Nodes {
			t.Logf("%s %s:\n%s", n.Name, n.KubeletUnit(), n.Journal(n.KubeletUnit()))
		}
		// Container logs, read on the nodes (the API server cannot
		// resolve the nodes' names to reach their kubelets).
		for _, n := range c.Nodes {
			logs, _ := filepath.Glob(n.Local("/var/log/pods/*/*/*.log"))
			for _, l := range logs {
				data, _ := os.ReadFile(l)
				if len(data) > 3000 {
					data = data[len(data)-3000:]
				}
				t.Logf("%s %s:\n%s", n.Name, strings.TrimPrefix(l, n.Root), data)
			}
		}
	})
}

// deployOperator applies operator/config/default with kubectl through an
// overlay that points it at the test images (already on the nodes: nothing
// is pulled), and returns the overlay. Without kube-proxy, pods reach the
// API server only over the node's network.
func deployOperator(t *testing.T, c *testutil.Cluster) string {
	t.Helper()
	host, port, _ := strings.Cut(strings.TrimPrefix(c.Config.Host, "https://"), ":")
	overlay := t.TempDir()
	kustomization := fmt.Sprintf(`resources:
  - %s
images:
  - name: shimkit-operator
    newName: %s
    newTag: %s
patches:
  - target: {kind: Deployment, name: shimkit-operator}
    patch: |
      - {op: add, path: /spec/template/spec/hostNetwork, value: true}
      - {op: add, path: /spec/template/spec/terminationGracePeriodSeconds, value: 1}
      - {op: replace, path: /spec/template/spec/containers/0/imagePullPolicy, value: Never}
      - {op: replace, path: /spec/template/spec/containers/0/env/0/value, value: %s}
      - {op: add, path: /spec/template/spec/containers/0/env/-, value: {name: KUBERNETES_SERVICE_HOST, value: "%s"}}
      - {op: add, path: /spec/template/spec/containers/0/env/-, value: {name: KUBERNETES_SERVICE_PORT, value: "%s"}}
      - {op: replace, path: /spec/template/spec/containers/0/args, value: ["--leader-elect", "--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:18081"]}
      - {op: remove, path: /spec/template/spec/containers/0/livenessProbe}
      - {op: remove, path: /spec/template/spec/containers/0/readinessProbe}
`, relTo(t, overlay, filepath.Join(testutil.RepoRoot(), "operator/config/default")), strings.Split(operatorImage, ":")[0], strings.Split(operatorImage, ":")[1], installerImage, host, port)
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		t.Fatal(err)
	}
	kubectl(t, c, "apply", "--server-side", "-k", overlay)
	kubectl(t, c, "-n", "shimkit-system", "rollout", "status", "deployment/shimkit-operator", "--timeout=120s")
	return overlay
}

// undeployOperator deletes what deployOperator applied (the CRD included:
// no Shim may be left).
func undeployOperator(t *testing.T, c *testutil.Cluster, overlay string) {
	t.Helper()
	kubectl(t, c, "delete", "-k", overlay, "--wait", "--timeout=120s")
}
