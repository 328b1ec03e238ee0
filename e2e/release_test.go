package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/internal/testutil"
)

// The two builds of a release the release scenario publishes: the
// tutorial installs the first, the operator is upgraded to the second.
const (
	releaseV1 = "v0.0.0-e2e.1"
	releaseV2 = "v0.0.0-e2e.2"
)

// published is a release pushed to the scenario's registry.
type published struct {
	version string
	chart   string            // oci://HOST/shimkit/charts/shimkit
	images  map[string]string // shimkit-operator → HOST/shimkit/shimkit-operator:VERSION@sha256:...
	plugin  string            // its kubectl-shimkit for this machine
	took    time.Duration     // make release and make publish
}

// releases are the two builds of a release, published to a registry on
// the cluster's network while the other scenarios run. The cluster runs
// this machine's platform alone, and so are they built: the packages are
// compiled before the tests with the release's flags (chartgen links the
// operator), so each build links its binaries with its own version stamp
// and packages them (the second differs from the first in that stamp
// alone); hack/releasetest checks the other platforms.
type releases struct {
	reg  *testutil.Registry
	done chan struct{}
	pub  [2]published
	err  error
}

// releaseLimit bounds the two builds and their publishing: warm, 24–28 s
// each; with their packages still to compile (go test run alone), a few
// minutes.
const releaseLimit = 12 * time.Minute

// publishReleases starts publishing releaseV1 and releaseV2 to a new
// registry of the cluster; wait returns them.
func publishReleases(t *testing.T, c *testutil.Cluster) *releases {
	r := &releases{reg: c.StartRegistry(t, "", ""), done: make(chan struct{})}
	dirs := [2]string{t.TempDir(), t.TempDir()}
	t.Cleanup(func() { <-r.done }) // before its directories go
	deadline := time.Now().Add(releaseLimit)
	go func() {
		defer close(r.done)
		for i, v := range []string{releaseV1, releaseV2} {
			if r.pub[i], r.err = publishRelease(t, r.reg, v, dirs[i], deadline); r.err != nil {
				return
			}
		}
	}()
	return r
}

// wait returns the two published builds, failing t if they are not.
func (r *releases) wait(t *testing.T) (first, second published) {
	t.Helper()
	<-r.done
	if r.err != nil {
		t.Fatal(r.err)
	}
	for _, p := range r.pub {
		t.Logf("make release and make publish %s: %s", p.version, p.took.Round(100*time.Millisecond))
	}
	return r.pub[0], r.pub[1]
}

// publishRelease makes a release of version named under reg with make
// release into dist, for this machine's platform, and pushes it there with
// make publish, as a maintainer does, both done by deadline.
func publishRelease(t *testing.T, reg *testutil.Registry, version, dist string, deadline time.Time) (published, error) {
	prefix := reg.Host + "/shimkit/"
	native := "linux/" + runtime.GOARCH
	vars := []string{"VERSION=" + version, "DIST=" + dist, "IMAGE_PREFIX=" + prefix}
	start := time.Now()
	if err := runMake(t, deadline, append(vars, "release", "IMAGE_PLATFORMS="+native, "PLUGIN_PLATFORMS="+native)...); err != nil {
		return published{}, err
	}
	if err := runMake(t, deadline, append(vars, "publish", "PLAIN_HTTP=1")...); err != nil {
		return published{}, err
	}
	p := published{version: version, chart: "oci://" + prefix + "charts/shimkit", images: map[string]string{},
		plugin: filepath.Join(dist, "kubectl-shimkit-"+version+"-linux-"+runtime.GOARCH), took: time.Since(start)}
	data, err := os.ReadFile(filepath.Join(dist, "images.txt"))
	if err != nil {
		return published{}, err
	}
	for _, line := range strings.Fields(string(data)) {
		name, _, _ := strings.Cut(strings.TrimPrefix(line, prefix), ":")
		p.images[name] = line
	}
	return p, nil
}

// runMake runs make with args in the repository, owned by the test and
// stopped at deadline. It runs at normal priority: its builds only link
// (seconds), and at the lowest priority beside the scenarios of a cold
// run, which keep both cores busy, one link took 92 s and the two builds
// missed their bound.
func runMake(t *testing.T, deadline time.Time, args ...string) error {
	cmd := testutil.Command(t, "make", append([]string{"--no-print-directory"}, args...)...)
	cmd.Dir = testutil.RepoRoot()
	if out, err := testutil.RunBounded(cmd, "make "+strings.Join(args, " "), time.Until(deadline)); err != nil {
		return fmt.Errorf("%w\n%s", err, out)
	}
	return nil
}

// userTools is a directory for the PATH of a user's shell: kubectl,
// the release's kubectl-shimkit, and helm. helm is a wrapper that adds
// what only this cluster needs: --plain-http (the scenario's registry
// talks HTTP) and, to install and upgrade, values (the operator on the
// host's network, as the cluster has no kube-proxy; see valuesFor).
func userTools(t *testing.T, c *testutil.Cluster, helmBin, plugin, values string) string {
	t.Helper()
	dir := t.TempDir()
	for name, target := range map[string]string{"kubectl": c.Kubectl, "kubectl-shimkit": plugin} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	wrapper := fmt.Sprintf(`#!/bin/bash
case "$1" in
install|upgrade) exec %[1]q "$@" --plain-http -f %[2]q ;;
pull|show|template) exec %[1]q "$@" --plain-http ;;
*) exec %[1]q "$@" ;;
esac
`, helmBin, values)
	if err := os.WriteFile(filepath.Join(dir, "helm"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// valuesFor are the chart values this cluster needs and a user's does not:
// without kube-proxy, pods reach the API server only over the host's
// network, so the operator runs there, its probes on a port of its own.
// The images are the release's: the chart pins them.
func valuesFor(t *testing.T, c *testutil.Cluster) string {
	t.Helper()
	host, port, _ := strings.Cut(strings.TrimPrefix(c.Config.Host, "https://"), ":")
	values := filepath.Join(t.TempDir(), "values.yaml")
	writeFile(t, values, fmt.Sprintf(`hostNetwork: true
strategy: {type: Recreate}
terminationGracePeriodSeconds: 1
metrics: {enabled: false}
healthProbe: {port: 18082}
extraEnv:
  - {name: KUBERNETES_SERVICE_HOST, value: %q}
  - {name: KUBERNETES_SERVICE_PORT, value: %q}
`, host, port))
	return values
}

// testRelease installs shimkit from its published artifacts alone and
// follows the tutorial verbatim on a cluster of one node, as a newcomer's
// kind or k3s cluster is (singleNode): it publishes two builds of a
// release to a registry on the cluster's network (make release, make
// publish), installs the first from the OCI chart by the tutorial's
// commands, with the Spin artifact served locally, and runs the page up to
// its upgrade of Spin. With the Shim Ready, it upgrades the operator to the
// second build: no runtime restarts, no installer Job starts, Ready never
// flips. Then the rest of the page: Spin upgraded, removed, shimkit
// uninstalled; the node is left as it was.
func testRelease(t *testing.T, c *testutil.Cluster, rel *releases, helmBin string, build testutil.ContainerdBuild) {
	// The chart's crds/ install the CRD (undeployOperator took the one of
	// operator/config).
	kubectl(t, c, "delete", "crd", crdName, "--wait", "--ignore-not-found")
	first, second := rel.wait(t)
	c.TrustRegistry(t, rel.reg)
	nodes := []testutil.ClusterNode{singleNode(t, c)}
	before := snapshotNodes(t, nodes)

	values := valuesFor(t, c)
	tools := userTools(t, c, helmBin, first.plugin, values)
	srv := c.StartFileServer(t)
	env := []string{"PATH=" + tools + ":/usr/sbin:/usr/bin:/sbin:/bin", "KUBECONFIG=" + c.Kubeconfig,
		"SHIMKIT_VERSION=" + strings.TrimPrefix(first.version, "v"), "SHIMKIT_CHART=" + first.chart,
		"SPIN_RELEASES=" + srv.URL + "/spin", "SPIN_APP_IMAGE=" + testutil.PauseImageRef}
	tu := readTutorial(t)
	for i, v := range []string{tu.page["SPIN_VERSION"], tu.page["SPIN_NEXT_VERSION"]} {
		if v == "" {
			t.Fatalf("%s: its env block sets no SPIN_VERSION or SPIN_NEXT_VERSION: %v", tutorialPage, tu.page)
		}
		// Two builds of a spin shim (the node's runc shim under Spin's
		// name), served where the page's URLs point.
		art := testutil.NewShimArchive(t, "spin", build.Binary("containerd-shim-runc-v2"), map[string]string{"VERSION": v, "BUILD": fmt.Sprint(i)})
		for _, arch := range []string{"x86_64", "aarch64"} {
			srv.Add("/spin/"+v+"/containerd-shim-spin-v2-linux-"+arch+".tar.gz", art.Data)
		}
	}
	env = append(env, "SPIN_VERSION="+tu.page["SPIN_VERSION"], "SPIN_NEXT_VERSION="+tu.page["SPIN_NEXT_VERSION"])
	tu.start(t, env)
	// The one line of the page this cluster cannot run: its Spin is the
	// node's runc shim, which runs a container's command, and the app is
	// the pause image; "/" is Spin's name for the component an image holds.
	tu.replace(t, "          command: [\"/\"]\n", "")

	start := time.Now()
	tu.runUntil(t, "Upgrade Spin")
	t.Logf("the tutorial, from helm install to a pinned Spin and its app: %s", time.Since(start).Round(time.Second))

	t.Run("operator upgrade", func(t *testing.T) { testOperatorUpgrade(t, c, nodes, second, tools, tu.env) })

	start = time.Now()
	tu.runUntil(t, "")
	t.Logf("the tutorial, from the Spin upgrade to helm uninstall: %s", time.Since(start).Round(time.Second))
	checkUninstalled(t, c, nodes, before)
	if out := kubectl(t, c, "get", "nodes", "-l", "runtime.shimkit.dev/spin", "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("the page left its label on %s", out)
	}
}

// singleNode makes the cluster one of a single node, as a newcomer's kind
// or k3s cluster is: every node but the first leaves it (RemoveNode), and
// the first is labelled a control plane with kind's and kubeadm's value,
// "", as kubeadm labels it once its kubelet has registered. The
// tutorial's node choice finds no worker there and takes that node, and
// its Shim must name the control-plane label to select it (the operator
// leaves control-plane nodes out otherwise). It returns the node.
func singleNode(t *testing.T, c *testutil.Cluster) testutil.ClusterNode {
	t.Helper()
	nodes := c.CurrentNodes()
	for _, n := range nodes[1:] {
		c.RemoveNode(t, n)
	}
	kubectl(t, c, "label", "node", nodes[0].Name, nodeview.ControlPlaneLabel+"=", "--overwrite")
	return nodes[0]
}
