package e2e

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// gvisorArtifact packs gVisor as a bundle: runsc, its containerd shim, and
// a runsc.toml that names runsc through the bundle placeholder. This machine
// kind lacks CAP_SYS_RESOURCE, which gVisor's shim needs to lower its OOM
// score (a real node does not), so the bundle also carries
// testutil.GVisorShimWrapper as containerd-shim-runsc-v1 in front of the
// real shim: one more bundle file that names others through the
// placeholder.
func gvisorArtifact(t *testing.T, version string) testutil.Archive {
	t.Helper()
	runsc, shim := testutil.GVisorBins(t)
	read := func(p string) []byte {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	toml := testutil.RunscConfig{Runsc: "$(BUNDLE_DIR)/runsc", Flags: testutil.RunscFlags()}.TOML()
	wrapper := testutil.GVisorShimWrapper("$(BUNDLE_DIR)/containerd-shim-runsc-v1.real", "$(BUNDLE_DIR)/uid_map")
	return testutil.NewArchive(t,
		testutil.ArchiveFile{Name: "runsc", Mode: 0o755, Data: read(runsc)},
		testutil.ArchiveFile{Name: "containerd-shim-runsc-v1.real", Mode: 0o755, Data: read(shim)},
		testutil.ArchiveFile{Name: "containerd-shim-runsc-v1", Mode: 0o755, Data: wrapper},
		testutil.ArchiveFile{Name: "uid_map", Mode: 0o644, Data: []byte(testutil.GVisorUIDMap)},
		testutil.ArchiveFile{Name: "runsc.toml", Mode: 0o644, Data: toml},
		testutil.ArchiveFile{Name: "VERSION", Mode: 0o644, Data: []byte(version + "\n")},
	)
}

// gvisorShim is the README's gVisor Shim, plus the files of the wrapper.
func gvisorShim(url, sha string, nodeSelector map[string]string) *v1alpha1.Shim {
	return &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Spec: v1alpha1.ShimSpec{
		NodeSelector:   nodeSelector,
		FetchStrategy:  v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{Location: url, SHA256: sha}},
		RuntimeClass:   v1alpha1.RuntimeClassSpec{Name: "gvisor", Handler: "runsc"},
		RuntimeType:    "io.containerd.runsc.v1",
		RuntimePath:    "$(BUNDLE_DIR)/containerd-shim-runsc-v1",
		RuntimeOptions: &runtime.RawExtension{Raw: []byte(`{"TypeUrl":"io.containerd.runsc.v1.options","ConfigPath":"$(BUNDLE_DIR)/runsc.toml"}`)},
		Files: []v1alpha1.BundleFile{
			{Path: "runsc", Mode: ptr.To[int32](0o755)},
			{Path: "containerd-shim-runsc-v1", Mode: ptr.To[int32](0o755), Substitute: true},
			{Path: "containerd-shim-runsc-v1.real", Mode: ptr.To[int32](0o755)},
			{Path: "uid_map"},
			{Path: "runsc.toml", Substitute: true},
			{Path: "VERSION"},
		},
	}}
}

// testGVisor installs gVisor as a bundle Shim on the cluster's first node,
// runs a pod inside gVisor (its kernel log is gVisor's), upgrades the
// bundle while the pod runs, and deletes the Shim: the node is clean and its
// containerd config byte-identical to before.
func testGVisor(t *testing.T, c *testutil.Cluster, node testutil.ClusterNode) {
	ctx := context.Background()
	testutil.ImportBusybox(t, "/usr/bin/ctr", node.Socket())
	origConfig, err := os.ReadFile(node.Local("/etc/containerd/config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	srv := c.StartFileServer(t)
	v1, v2 := gvisorArtifact(t, "1"), gvisorArtifact(t, "2")
	v1URL, v2URL := srv.Add("/gvisor-1.tar.gz", v1.Data), srv.Add("/gvisor-2.tar.gz", v2.Data)

	start := time.Now()
	if err := c.Client.Create(ctx, gvisorShim(v1URL, v1.SHA256, onNode(node))); err != nil {
		t.Fatal(err)
	}
	kubectl(t, c, "wait", "--for=condition=Ready", "shim/gvisor", "--timeout=120s")
	t.Logf("gVisor Shim Ready in %v", time.Since(start).Round(time.Millisecond))

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "in-gvisor", Namespace: "default"},
		Spec: corev1.PodSpec{
			RuntimeClassName:              ptr.To("gvisor"),
			TerminationGracePeriodSeconds: ptr.To(int64(1)),
			Containers: []corev1.Container{{Name: "sh", Image: testutil.BusyboxImageRef, ImagePullPolicy: corev1.PullNever,
				Command: []string{"/bin/busybox", "sh", "-c", "dmesg; echo kernel: $(cat /proc/version); sleep 3600"}}},
		},
	}
	if err := c.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	running := c.WaitPodRunning(t, "default", "in-gvisor")
	containerID := running.Status.ContainerStatuses[0].ContainerID
	logs := func() string {
		files, _ := filepath.Glob(node.Local("/var/log/pods/default_in-gvisor_*/sh/*.log"))
		var all []byte
		for _, f := range files {
			data, _ := os.ReadFile(f)
			all = append(all, data...)
		}
		return string(all)
	}
	waitFor(t, 30*time.Second, "the pod's kernel log", func() bool { return strings.Contains(logs(), "kernel:") })
	if l := logs(); !strings.Contains(l, "gVisor") {
		t.Fatalf("the pod does not run in gVisor; its log:\n%s", l)
	}
	exe, ok := testutil.ShimOf(podSandboxOf(t, node, strings.TrimPrefix(containerID, "containerd://")))
	if want := resolved(t, node, "/opt/shimkit/gvisor/current/containerd-shim-runsc-v1.real"); !ok || exe != want {
		t.Errorf("the pod's shim is %q, want %s", exe, want)
	}

	// Upgrade while the pod runs: the bundle switches, the pod keeps running.
	oldVersion := resolved(t, node, "/opt/shimkit/gvisor/current")
	s := &v1alpha1.Shim{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: "gvisor"}, s); err != nil {
		t.Fatal(err)
	}
	oldHash := s.Status.SpecHash
	s.Spec.FetchStrategy.AnonHTTP = &v1alpha1.AnonHTTPFetch{Location: v2URL, SHA256: v2.SHA256}
	if err := c.Client.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	waitUpgraded(t, c, node, s, oldHash)
	if v, _ := os.ReadFile(node.Local("/opt/shimkit/gvisor/current/VERSION")); string(v) != "2\n" {
		t.Errorf("current bundle VERSION = %q after the upgrade", v)
	}
	// The pod's shim started from the old version, which stays while it
	// runs (gVisor's shim reads its runsc.toml and runs its runsc).
	if _, err := os.Stat(node.Local(oldVersion)); err != nil {
		t.Errorf("old bundle %s removed under the pod that runs from it: %v", oldVersion, err)
	}
	p := &corev1.Pod{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "in-gvisor"}, p); err != nil {
		t.Fatal(err)
	}
	if st := p.Status.ContainerStatuses[0]; p.Status.Phase != corev1.PodRunning || st.ContainerID != containerID || st.RestartCount != 0 {
		t.Errorf("the pod did not keep running through the upgrade: %s %+v", p.Status.Phase, st)
	}

	// Delete: the pod, then the Shim.
	if err := c.Client.Delete(ctx, p, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the pod gone", func() bool {
		return apierrors.IsNotFound(c.Client.Get(ctx, client.ObjectKeyFromObject(p), &corev1.Pod{}))
	})
	if err := c.Client.Delete(ctx, s); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 180*time.Second, "shim gvisor gone", func() bool {
		return apierrors.IsNotFound(c.Client.Get(ctx, client.ObjectKey{Name: "gvisor"}, &v1alpha1.Shim{}))
	})
	if err := c.Client.Get(ctx, client.ObjectKey{Name: "gvisor"}, &nodev1.RuntimeClass{}); !apierrors.IsNotFound(err) {
		t.Errorf("RuntimeClass gvisor still there: %v", err)
	}
	if got, _ := os.ReadFile(node.Local("/etc/containerd/config.toml")); !bytes.Equal(got, origConfig) {
		t.Errorf("node config not restored:\n%s", got)
	}
	if _, err := os.Stat(node.Local("/opt/shimkit")); !os.IsNotExist(err) {
		t.Errorf("/opt/shimkit left on the node: %v", err)
	}
}

// resolved returns where a node path's symlinks lead, as a node path.
func resolved(t *testing.T, node testutil.ClusterNode, nodePath string) string {
	t.Helper()
	p, err := filepath.EvalSymlinks(node.Local(nodePath))
	if err != nil {
		t.Fatalf("%s: %v", nodePath, err)
	}
	return strings.TrimPrefix(p, node.Root)
}
