package e2e

import (
	"bytes"
	"context"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// gvisorRelease packs gVisor as gVisor releases it since 2026-08, one
// gvisor.tar.zstd per architecture: runsc, containerd-shim-runsc-v1 and the
// directory gvisor-bin/ of runsc's sidecars, all built from source here.
// Stand-ins, as no sidecar builds from the go branch: gvisor-bin/ holds the
// two a pod without metrics or checkpoints never starts
// (runsc-metric-server and checkpointgofer: scripts that fail, naming the
// release), and no gvisor_sentry: this runsc boots the Sentry itself
// (testutil.RunscFlags).
func gvisorRelease(t *testing.T, release string) testutil.Archive {
	t.Helper()
	runsc, shim := testutil.GVisorBins(t)
	read := func(p string) []byte {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	standIn := func(name string) testutil.ArchiveFile {
		return testutil.ArchiveFile{Name: "gvisor-bin/" + name, Mode: 0o755, Data: []byte("#!/bin/sh\necho " + name + " of " + release + ": a stand-in >&2\nexit 1\n")}
	}
	return testutil.NewArchive(t,
		testutil.ArchiveFile{Name: "runsc", Mode: 0o755, Data: read(runsc)},
		testutil.ArchiveFile{Name: "containerd-shim-runsc-v1", Mode: 0o755, Data: read(shim)},
		standIn("checkpointgofer"), standIn("runsc-metric-server"),
	).Zstd(t)
}

// gvisorShim is the gVisor sample (operator/config/samples/shim_gvisor.yaml)
// installing release from srv, where it lies as on gVisor's release site,
// on the nodes of nodeSelector. This machine kind lacks CAP_SYS_RESOURCE,
// which gVisor's shim needs to lower its OOM score (a real node does not),
// so the Shim also writes testutil.GVisorShimWrapper, in front of gVisor's
// shim, and its uid_map: two files with content, the wrapper the handler's
// runtimePath.
func gvisorShim(t *testing.T, srv *testutil.FileServer, release string, nodeSelector map[string]string) *v1alpha1.Shim {
	t.Helper()
	data, err := os.ReadFile("../operator/config/samples/shim_gvisor.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := &v1alpha1.Shim{}
	if err := yaml.UnmarshalStrict(data, s); err != nil {
		t.Fatal(err)
	}
	s.Spec.NodeSelector = nodeSelector
	a := gvisorRelease(t, release)
	for i, p := range s.Spec.FetchStrategy.AnonHTTP.Platforms {
		u, err := url.Parse(p.Location)
		if err != nil || !strings.HasSuffix(u.Path, "/gvisor.tar.zstd") {
			t.Fatalf("the sample's %s location %q is not a gvisor.tar.zstd: %v", p.Platform, p.Location, err)
		}
		dir, arch := path.Split(path.Dir(u.Path))
		s.Spec.FetchStrategy.AnonHTTP.Platforms[i].Location = srv.Add(path.Join(path.Dir(path.Clean(dir)), release, arch, "gvisor.tar.zstd"), a.Data)
	}
	wrapper := string(testutil.GVisorShimWrapper("$(BUNDLE_DIR)/containerd-shim-runsc-v1", "$(BUNDLE_DIR)/uid_map"))
	s.Spec.RuntimePath = "$(BUNDLE_DIR)/shim-wrapper"
	s.Spec.Files = append(s.Spec.Files,
		v1alpha1.BundleFile{Path: "shim-wrapper", Mode: ptr.To[int32](0o755), Substitute: true, Content: &wrapper},
		v1alpha1.BundleFile{Path: "uid_map", Content: ptr.To(testutil.GVisorUIDMap)},
	)
	return s
}

// testGVisor installs gVisor from its release tarball by the sample Shim
// on the cluster's first node: runsc, its shim and gvisor-bin/ laid out,
// runsc.toml written by the Shim. A pod runs inside gVisor (its kernel log
// is gVisor's); the next release is rolled out while the pod runs, and the
// Shim deleted: the node is clean and its containerd config
// byte-identical to before.
func testGVisor(t *testing.T, c *testutil.Cluster, node testutil.ClusterNode) {
	ctx := context.Background()
	testutil.ImportBusybox(t, "/usr/bin/ctr", node.Socket())
	origConfig, err := os.ReadFile(node.Local("/etc/containerd/config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	srv := c.StartFileServer(t)
	const release1, release2 = "20261005.0", "20261012.0"

	start := time.Now()
	if err := c.Client.Create(ctx, gvisorShim(t, srv, release1, onNode(node))); err != nil {
		t.Fatal(err)
	}
	kubectl(t, c, "wait", "--for=condition=Ready", "shim/gvisor", "--timeout=120s")
	t.Logf("gVisor Shim Ready in %v", time.Since(start).Round(time.Millisecond))
	sidecar := func() string {
		data, _ := os.ReadFile(node.Local("/opt/shimkit/gvisor/current/gvisor-bin/runsc-metric-server"))
		return string(data)
	}
	if fi, err := os.Stat(node.Local("/opt/shimkit/gvisor/current/gvisor-bin/checkpointgofer")); err != nil || fi.Mode().Perm() != 0o755 || !strings.Contains(sidecar(), release1) {
		t.Errorf("gvisor-bin/ not laid out with the release's sidecars, mode 0755: %v %v %q", fi, err, sidecar())
	}
	if toml, err := os.ReadFile(node.Local("/opt/shimkit/gvisor/current/runsc.toml")); err != nil || string(toml) != "binary_name = \"/opt/shimkit/gvisor/current/runsc\"\n" {
		t.Errorf("runsc.toml the Shim writes: %q %v", toml, err)
	}

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
	if want := resolved(t, node, "/opt/shimkit/gvisor/current/containerd-shim-runsc-v1"); !ok || exe != want {
		t.Errorf("the pod's shim is %q, want %s", exe, want)
	}

	// Upgrade while the pod runs: the bundle switches, the pod keeps running.
	oldVersion := resolved(t, node, "/opt/shimkit/gvisor/current")
	s := &v1alpha1.Shim{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: "gvisor"}, s); err != nil {
		t.Fatal(err)
	}
	oldHash := s.Status.SpecHash
	s.Spec.FetchStrategy = gvisorShim(t, srv, release2, nil).Spec.FetchStrategy
	if err := c.Client.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	waitUpgraded(t, c, node, s, oldHash)
	if got := sidecar(); !strings.Contains(got, release2) {
		t.Errorf("current gvisor-bin/runsc-metric-server after the upgrade: %q, want %s's", got, release2)
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
