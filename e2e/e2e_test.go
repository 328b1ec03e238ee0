// Package e2e runs shimkit end to end on a real single-node Kubernetes
// cluster (internal/testutil.StartCluster): the operator deployed from its
// manifests, installer Jobs restarting the node's containerd through
// systemd, and pods running on the RuntimeClass it publishes.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/fetch"
	"github.com/shimkit/shimkit/internal/imagebuild"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

const (
	operatorImage  = "shimkit.test/shimkit-operator:e2e"
	installerImage = "shimkit.test/shimkit-installer:e2e"
)

func TestEndToEnd(t *testing.T) {
	ctx := context.Background()
	build := testutil.ContainerdMatrix(t)[2]
	c := testutil.StartCluster(t, build, v1alpha1.AddToScheme)
	dumpOnFailure(t, c)
	loadImages(t, c)
	deployOperator(t, c)
	origConfig, err := os.ReadFile(c.Node.Local("/etc/containerd/config.toml"))
	if err != nil {
		t.Fatal(err)
	}

	runcShim := build.Binary("containerd-shim-runc-v2")
	srv := testutil.StartFileServer(t)
	v1 := testutil.NewShimArchive(t, "e2e", runcShim, nil)
	v2 := testutil.NewShimArchive(t, "e2e", runcShim, map[string]string{"VERSION": "2\n"})
	v1URL, v2URL := srv.Add("/e2e-v1.tar.gz", v1.Data), srv.Add("/e2e-v2.tar.gz", v2.Data)

	reg := testutil.StartRegistry(t, "", "")
	oci := testutil.NewShimArchive(t, "e2eoci", runcShim, nil)
	reg.PushShim(t, "shims/e2eoci", "v1", testutil.PlatformArtifact{
		Platform: ocispec.Platform{OS: "linux", Architecture: fetch.HostPlatform().Architecture}, MediaType: fetch.MediaTypeShimLayer, Data: oci.Data,
	})

	httpShim := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "e2e"}, Spec: v1alpha1.ShimSpec{
		FetchStrategy: v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{Location: v1URL, SHA256: v1.SHA256}},
		RuntimeClass:  v1alpha1.RuntimeClassSpec{Name: "e2e", Handler: "e2e"},
	}}
	ociShim := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "e2eoci"}, Spec: v1alpha1.ShimSpec{
		FetchStrategy: v1alpha1.FetchStrategy{Type: v1alpha1.FetchOCI, OCI: &v1alpha1.OCIFetch{Reference: reg.Host + "/shims/e2eoci:v1", PlainHTTP: true}},
		RuntimeClass:  v1alpha1.RuntimeClassSpec{Name: "e2eoci", Handler: "e2eoci"},
	}}
	for _, s := range []*v1alpha1.Shim{httpShim, ociShim} {
		if err := c.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		kubectl(t, c, "wait", "--for=condition=Ready", "shim/"+s.Name, "--timeout=60s")

		node := &corev1.Node{}
		if err := c.Client.Get(ctx, client.ObjectKey{Name: c.NodeName}, node); err != nil {
			t.Fatal(err)
		}
		if ok, _ := nodelabel.State(node, s.Name); !ok {
			t.Errorf("node not labelled for %s: %v", s.Name, node.Labels)
		}
		rc := &nodev1.RuntimeClass{}
		if err := c.Client.Get(ctx, client.ObjectKey{Name: s.Spec.RuntimeClass.Name}, rc); err != nil || rc.Handler != s.Spec.RuntimeClass.Handler {
			t.Fatalf("RuntimeClass %s: %v %+v", s.Spec.RuntimeClass.Name, err, rc)
		}
		waitFor(t, 60*time.Second, "runtimeHandlers to list "+s.Spec.RuntimeClass.Handler, func() bool {
			_ = c.Client.Get(ctx, client.ObjectKey{Name: c.NodeName}, node)
			return slices.ContainsFunc(node.Status.RuntimeHandlers, func(h corev1.NodeRuntimeHandler) bool { return h.Name == s.Spec.RuntimeClass.Handler })
		})
		exe := runPod(t, c, "pod-"+s.Name, s.Spec.RuntimeClass.Name)
		if want := resolved(t, c, "/opt/shimkit/"+s.Name+"/current/containerd-shim-"+s.Spec.RuntimeClass.Handler+"-v2"); exe != want {
			t.Errorf("the pod's shim is %s, want the installed %s", exe, want)
		}
	}

	// Upgrade the HTTP shim: a new artifact rolls out.
	s := &v1alpha1.Shim{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: "e2e"}, s); err != nil {
		t.Fatal(err)
	}
	oldHash := s.Status.SpecHash
	s.Spec.FetchStrategy.AnonHTTP = &v1alpha1.AnonHTTPFetch{Location: v2URL, SHA256: v2.SHA256}
	if err := c.Client.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	waitUpgraded(t, c, s, oldHash)
	if bin, _ := os.ReadFile(c.Node.Local("/opt/shimkit/e2e/current/containerd-shim-e2e-v2")); !bytes.Equal(bin, v2.Binary) {
		t.Error("the node does not have the upgraded binary")
	}

	// Delete everything: pods first, then the Shims.
	for _, p := range []string{"pod-e2e", "pod-e2eoci"} {
		_ = c.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p, Namespace: "default"}}, client.GracePeriodSeconds(0))
	}
	for _, name := range []string{"e2e", "e2eoci"} {
		if err := c.Client.Delete(ctx, &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"e2e", "e2eoci"} {
		waitFor(t, 180*time.Second, "shim "+name+" gone", func() bool {
			return apierrors.IsNotFound(c.Client.Get(ctx, client.ObjectKey{Name: name}, &v1alpha1.Shim{}))
		})
		if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, &nodev1.RuntimeClass{}); !apierrors.IsNotFound(err) {
			t.Errorf("RuntimeClass %s still there: %v", name, err)
		}
	}
	node := &corev1.Node{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: c.NodeName}, node); err != nil {
		t.Fatal(err)
	}
	for k := range node.Labels {
		if strings.HasPrefix(k, nodelabel.Prefix) {
			t.Errorf("node label %s left", k)
		}
	}
	if got, _ := os.ReadFile(c.Node.Local("/etc/containerd/config.toml")); !bytes.Equal(got, origConfig) {
		t.Errorf("node config not restored:\n%s", got)
	}
	if _, err := os.Stat(c.Node.Local("/opt/shimkit")); !os.IsNotExist(err) {
		t.Errorf("/opt/shimkit left on the node: %v", err)
	}
}

// waitUpgraded waits until the Shim s (updated with a new spec, away from
// oldHash) is installed at its new spec hash on the node.
func waitUpgraded(t *testing.T, c *testutil.Cluster, s *v1alpha1.Shim, oldHash string) {
	t.Helper()
	ctx := context.Background()
	waitFor(t, 180*time.Second, "the upgrade of "+s.Name, func() bool {
		_ = c.Client.Get(ctx, client.ObjectKeyFromObject(s), s)
		node := &corev1.Node{}
		_ = c.Client.Get(ctx, client.ObjectKey{Name: c.NodeName}, node)
		_, hash := nodelabel.State(node, s.Name)
		return s.Status.SpecHash != oldHash && hash == s.Status.SpecHash && s.Status.UpdatedNodes == 1
	})
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
		// Container logs, read on the node (the API server cannot resolve
		// the node's name to reach its kubelet).
		logs, _ := filepath.Glob(c.Node.Local("/var/log/pods/*/*/*.log"))
		for _, l := range logs {
			data, _ := os.ReadFile(l)
			if len(data) > 3000 {
				data = data[len(data)-3000:]
			}
			t.Logf("%s:\n%s", strings.TrimPrefix(l, c.Node.Root), data)
		}
	})
}

// loadImages builds the operator and installer images without Docker and
// imports them into the node's containerd.
func loadImages(t *testing.T, c *testutil.Cluster) {
	t.Helper()
	dir := t.TempDir()
	for _, img := range []struct{ cmd, ref, user string }{
		{"shimkit-operator", operatorImage, "65532"}, {"shimkit-installer", installerImage, ""},
	} {
		bin := filepath.Join(dir, img.cmd)
		b := exec.Command("go", "build", "-o", bin, "./cmd/"+img.cmd)
		b.Dir = testutil.RepoRoot()
		b.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := b.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", img.cmd, err, out)
		}
		tarPath := bin + ".tar"
		if err := imagebuild.Write(imagebuild.Image{Ref: img.ref, Binary: bin, Name: img.cmd, User: img.user}, tarPath); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("/usr/bin/ctr", "--address", c.Node.Socket(), "-n", "k8s.io", "images", "import", tarPath).CombinedOutput(); err != nil {
			t.Fatalf("import %s: %v\n%s", img.ref, err, out)
		}
	}
}

// deployOperator applies operator/config/default with kubectl through an
// overlay that points it at the test images (already on the node: nothing
// is pulled). Without kube-proxy, pods reach the API server only over the
// host's network.
func deployOperator(t *testing.T, c *testutil.Cluster) {
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
}

// runPod runs a host-network pause pod with the RuntimeClass and returns
// the path of the shim binary that runs its sandbox, as the node sees it.
func runPod(t *testing.T, c *testutil.Cluster, name, runtimeClass string) string {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			RuntimeClassName:              ptr.To(runtimeClass),
			HostNetwork:                   true,
			TerminationGracePeriodSeconds: ptr.To(int64(1)),
			Containers:                    []corev1.Container{{Name: "pause", Image: testutil.PauseImageRef, ImagePullPolicy: corev1.PullNever}},
		},
	}
	if err := c.Client.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	p := c.WaitPodRunning(t, "default", name)
	id := strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")
	exe, ok := testutil.ShimOf(podSandboxOf(t, c, id))
	if !ok {
		t.Fatalf("no shim process for pod %s", name)
	}
	return exe
}

// podSandboxOf asks CRI for the sandbox of a container.
func podSandboxOf(t *testing.T, c *testutil.Cluster, containerID string) string {
	t.Helper()
	out, err := exec.Command("/usr/bin/ctr", "--address", c.Node.Socket(), "-n", "k8s.io", "containers", "info", containerID).Output()
	if err != nil {
		t.Fatalf("ctr containers info %s: %v", containerID, err)
	}
	const key = `"io.kubernetes.cri.sandbox-id": "`
	i := strings.Index(string(out), key)
	if i < 0 {
		t.Fatalf("no sandbox id in %s", out)
	}
	rest := string(out[i+len(key):])
	return rest[:strings.IndexByte(rest, '"')]
}

func kubectl(t *testing.T, c *testutil.Cluster, args ...string) string {
	t.Helper()
	out, err := exec.Command(c.Kubectl, append([]string{"--kubeconfig", c.Kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// relTo returns target relative to dir (kustomize wants relative bases).
func relTo(t *testing.T, dir, target string) string {
	t.Helper()
	rel, err := filepath.Rel(dir, target)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}
