package e2e

import (
	"context"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/installer/canarypod"
	"github.com/shimkit/shimkit/internal/testutil"
)

// testCRIONode: a CRI-O node (crio.service under systemd, CRI-O v1.34
// built here, testutil.JoinOptions.CRIO) joins the cluster beside its
// containerd nodes and gets Ready with kubelet v1.36 (outside CRI-O's skew
// policy); an OCI runtime Shim (Debian's runc as its bundle's binary:
// Debian's crun 1.8.1 refuses CRI-O v1.34's containers) installed into it
// by Installer.Install restarts crio.service through systemd, and its
// canary pod runs to a zero exit through the kubelet, on the new handler
// by a RuntimeClass; the Node announces the handler; the uninstall leaves
// /etc/crio byte for byte as it was.
func testCRIONode(t *testing.T, c *testutil.Cluster, dump *dumper, images []string) {
	ctx := context.Background()
	start := time.Now()
	n := c.AddNode(t, testutil.JoinOptions{CRIO: true, Images: images})
	dump.onFailure(t)
	node := &corev1.Node{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: n.Name}, node); err != nil {
		t.Fatal(err)
	}
	info := node.Status.NodeInfo
	t.Logf("CRI-O node %s Ready in %v: kubelet %s, runtime %s, beside %s", n.Name, time.Since(start), info.KubeletVersion, info.ContainerRuntimeVersion, c.NodeName)
	if !strings.HasPrefix(info.ContainerRuntimeVersion, "cri-o://") {
		t.Fatalf("runtime %q", info.ContainerRuntimeVersion)
	}

	etc := n.Local("/etc/crio")
	before := testutil.Tree(t, etc)
	url, a := serveNodeRunc(t, c, n, "bin/runc", "/runc-shimkit.tar.gz")
	p := plan.New(plan.ShimRef{Name: "runc-shimkit", UID: "uid-runc-shimkit"}, plan.OpInstall)
	p.Artifact = &plan.Artifact{Type: plan.SourceHTTP, URL: url, Digest: "sha256:" + a.SHA256}
	p.Files = []plan.File{{Source: "runc", Path: "runc", Mode: 0o755}}
	p.Handlers = []plan.Handler{{Name: "runc-shimkit", RuntimeType: "io.containerd.runc.v2", Options: map[string]any{"BinaryName": "$(BUNDLE_DIR)/runc"}}}
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "shimkit-canary-runc"}, Handler: "runc-shimkit"}
	if err := c.Client.Create(ctx, rc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Client.Delete(context.Background(), rc) })
	p.Canary = &plan.Canary{Handler: "runc-shimkit", RuntimeClass: rc.Name, Namespace: "default",
		Image: testutil.CRIOPauseImage(t, n.Node), Command: []string{"/pause", "exit", "0"}, Timeout: plan.Duration(2 * time.Minute)}
	p.SpecHash = "crio-v1"
	pods, err := canarypod.NewRESTPods(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	inst := &installer.Installer{HostRoot: n.Root, Canary: canarypod.New(pods, n.Name)}
	res, err := inst.Install(ctx, p)
	if err != nil {
		t.Fatalf("install: %v\n%s\n%s", err, n.Journal("crio"), n.Journal("kubelet"))
	}
	t.Logf("installed in %v (restart and check %v, canary through the kubelet %v)", res.Duration, res.RestartDuration, res.CanaryDuration)
	if !res.Restarted || res.CanaryDuration <= 0 {
		t.Errorf("install: %+v", res)
	}
	waitHandler(t, c, n.Name, "runc-shimkit", true)

	if _, err := inst.Uninstall(ctx, plan.New(plan.ShimRef{Name: "runc-shimkit", UID: "uid-runc-shimkit"}, plan.OpUninstall)); err != nil {
		t.Fatalf("uninstall: %v", err)
	}
	if after := testutil.Tree(t, etc); !maps.Equal(before, after) {
		t.Errorf("install then uninstall changed /etc/crio:\nbefore %v\nafter  %v", slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
	}
	waitHandler(t, c, n.Name, "runc-shimkit", false)
}

// waitHandler waits up to a minute for the Node's runtimeHandlers to
// list the handler (present) or not.
func waitHandler(t *testing.T, c *testutil.Cluster, name, handler string, present bool) {
	t.Helper()
	var got []string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		node := &corev1.Node{}
		if err := c.Client.Get(context.Background(), client.ObjectKey{Name: name}, node); err != nil {
			t.Fatal(err)
		}
		got = nil
		for _, h := range node.Status.RuntimeHandlers {
			got = append(got, h.Name)
		}
		if slices.Contains(got, handler) == present {
			return
		}
	}
	t.Errorf("node %s: runtimeHandlers %v, want %s present=%t", name, got, handler, present)
}

// serveNodeRunc serves an archive of the node's runc (Debian's), at
// member in it, from a file server of the cluster at urlPath.
func serveNodeRunc(t *testing.T, c *testutil.Cluster, n testutil.ClusterNode, member, urlPath string) (string, testutil.Archive) {
	t.Helper()
	runc, err := os.ReadFile(n.Local("/usr/bin/runc"))
	if err != nil {
		t.Fatal(err)
	}
	a := testutil.NewArchive(t, testutil.ArchiveFile{Name: member, Mode: 0o755, Data: runc})
	return c.StartFileServer(t).Add(urlPath, a.Data), a
}
