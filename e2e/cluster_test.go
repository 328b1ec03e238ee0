package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/shimkit/shimkit/internal/imagebuild"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestCluster runs every end-to-end scenario on one real cluster, each
// leaving it as it found it: booting the cluster and building the images
// once keeps the suite's time down. The scenarios run at once, each on
// nodes it joins for itself (progressive delivery on the cluster's three
// nodes); the make targets' and the release's (installed from its
// published chart by the tutorial's commands, on the cluster made one of a
// single node) replace the operator, after them.
func TestCluster(t *testing.T) {
	build := testutil.ContainerdMatrix(t)[2]
	c := testutil.StartClusterWith(t, testutil.ClusterOptions{Containerd: build, Nodes: 3, AddToScheme: []func(*runtime.Scheme) error{v1alpha1.AddToScheme}})
	dump := &dumper{c: c}
	dump.onFailure(t)
	images := loadImages(t, c)
	overlay := deployOperator(t, c)

	// The scenarios run at once: none touches another's nodes or Shims.
	// Progressive delivery, then the rollouts of the nodes scenario, on the
	// cluster's three nodes, beside the others (on nodes each joins), two
	// at a time, the longest first. Two cores are the limit, not waits:
	// more at once, or more nodes, make each slower (an idle node takes
	// ~2% of them).
	base := slices.Clone(c.Nodes)
	rel := publishReleases(t, c) // built beside the scenarios, for the release's
	t.Run("concurrent", func(t *testing.T) {
		g := scenarios{t: t, slots: make(chan struct{}, 2)}
		g.run("base", false, func(t *testing.T) {
			if t.Run("progressive", func(t *testing.T) { testProgressive(t, c, base, build) }) {
				t.Run("nodes", func(t *testing.T) { testNodes(t, c, dump, base, build, images) })
			}
		})
		g.run("fleet", true, func(t *testing.T) { testFleet(t, c, dump, images) })
		g.run("operator", true, func(t *testing.T) { testOperator(t, c, ownNode(t, c, dump, images), build) })
		g.run("images", true, func(t *testing.T) { testImages(t, c, dump, images) })
		g.run("gvisor", true, func(t *testing.T) { testGVisor(t, c, ownNode(t, c, dump, images)) })
		g.run("refusal", true, func(t *testing.T) { testRefusal(t, c, ownNode(t, c, dump, images), build) })
		g.run("workloads", true, func(t *testing.T) { testWorkloads(t, c, ownNode(t, c, dump, images), build) })
		g.run("drain", true, func(t *testing.T) {
			testDrain(t, c, ownNode(t, c, dump, images), ownNode(t, c, dump, images), build)
		})
		g.run("crio", true, func(t *testing.T) { testCRIOFleet(t, c, dump, images) })
		g.run("crionode", true, func(t *testing.T) { testCRIONode(t, c, dump, images) })
		g.wait()
	})
	// Each scenario deletes its Shims; after a failure, what is left goes
	// here, so that the next one starts clean.
	deleteShims(t, c)
	// Every reconcile of the scenarios read, decided, then wrote.
	if logs := kubectl(t, c, "-n", "shimkit-system", "logs", "deployment/shimkit-operator"); strings.Contains(logs, "reconcile out of phase") {
		t.Errorf("the operator wrote before a decision or read after one:\n%s", grepLines(logs, "reconcile out of phase", 20))
	}

	undeployOperator(t, c, overlay)
	t.Run("make", func(t *testing.T) {
		toolBinary(t, "", "kustomize") // the make targets' (not built inside the test)
		testMakeTargets(t, c)
	})
	// Last: it makes the cluster one of a single node.
	t.Run("release", func(t *testing.T) { testRelease(t, c, rel, toolBinary(t, "HELM", "helm"), build) })
}

// scenarios runs subtests of t at once, each in a t.Run of its own
// goroutine (t.Parallel's limit, GOMAXPROCS, counts the waiting ones
// too), those that take a slot no more than cap(slots) at a time, in the
// order they are given.
type scenarios struct {
	t     *testing.T
	slots chan struct{}
	wg    sync.WaitGroup
}

// run starts f as subtest name; a scenario that takes a slot waits for
// one first.
func (g *scenarios) run(name string, slot bool, f func(t *testing.T)) {
	if slot {
		g.slots <- struct{}{}
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		if slot {
			defer func() { <-g.slots }()
		}
		g.t.Run(name, f)
	}()
}

// wait returns once every scenario has ended.
func (g *scenarios) wait() { g.wg.Wait() }

// ownNode joins a node for t alone; a failure of t dumps the cluster
// while the node is there.
func ownNode(t *testing.T, c *testutil.Cluster, dump *dumper, images []string) testutil.ClusterNode {
	t.Helper()
	n := c.AddNode(t, testutil.JoinOptions{Images: images})
	dump.onFailure(t)
	return n
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
// imports them into every node's containerd, and returns both archives,
// for the nodes that join later (JoinOptions.Images): an operator pod
// deleted mid-test (the drain scenario's) may be scheduled onto one of
// them, where it found no image once (ErrImageNeverPull).
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

// grepLines returns the first n lines of text that contain s.
func grepLines(text, s string, n int) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) && len(out) < n {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
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
      - {op: replace, path: /spec/template/spec/containers/0/args, value: ["--leader-elect", "--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:18081", "--check-phases"]}
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
