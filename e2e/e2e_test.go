// Package e2e runs shimkit end to end on a real three-node Kubernetes
// cluster (internal/testutil.StartClusterWith): the operator deployed from
// its manifests (or its Helm chart), installer Jobs restarting the nodes'
// containerd through systemd, and pods running on the RuntimeClasses it
// publishes.
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
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/fetch"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

const (
	operatorImage  = "shimkit.test/shimkit-operator:e2e"
	installerImage = "shimkit.test/shimkit-installer:e2e"
)

// testOperator: two Shims (HTTP and OCI artifacts) on the first node, the
// canary, drift repair, an upgrade and the deletion, with the operator
// deployed from operator/config/default.
func testOperator(t *testing.T, c *testutil.Cluster, node testutil.ClusterNode, build testutil.ContainerdBuild) {
	ctx := context.Background()
	origConfig, err := os.ReadFile(node.Local("/etc/containerd/config.toml"))
	if err != nil {
		t.Fatal(err)
	}

	runcShim := build.Binary("containerd-shim-runc-v2")
	srv := c.StartFileServer(t)
	v1 := testutil.NewShimArchive(t, "e2e", runcShim, nil)
	v2 := testutil.NewShimArchive(t, "e2e", runcShim, map[string]string{"VERSION": "2\n"})
	v1URL, v2URL := srv.Add("/e2e-v1.tar.gz", v1.Data), srv.Add("/e2e-v2.tar.gz", v2.Data)

	reg := c.StartRegistry(t, "", "")
	oci := testutil.NewShimArchive(t, "e2eoci", runcShim, nil)
	reg.PushShim(t, "shims/e2eoci", "v1", testutil.PlatformArtifact{
		Platform: ocispec.Platform{OS: "linux", Architecture: fetch.HostPlatform().Architecture}, MediaType: fetch.MediaTypeShimLayer, Data: oci.Data,
	})

	httpShim := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "e2e"}, Spec: v1alpha1.ShimSpec{
		NodeSelector:  onNode(node),
		FetchStrategy: v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{Location: v1URL, SHA256: v1.SHA256}},
		RuntimeClass:  v1alpha1.RuntimeClassSpec{Name: "e2e", Handler: "e2e"},
	}}
	ociShim := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "e2eoci"}, Spec: v1alpha1.ShimSpec{
		NodeSelector: onNode(node),
		FetchStrategy: v1alpha1.FetchStrategy{Type: v1alpha1.FetchOCI, OCI: &v1alpha1.OCIFetch{Reference: reg.Host + "/shims/e2eoci:v1", PlainHTTP: true,
			// The test's registry is on the cluster's network, not on
			// the nodes' loopback.
			Insecure: true}},
		RuntimeClass: v1alpha1.RuntimeClassSpec{Name: "e2eoci", Handler: "e2eoci"},
	}}
	for _, s := range []*v1alpha1.Shim{httpShim, ociShim} {
		if err := c.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		kubectl(t, c, "wait", "--for=condition=Ready", "shim/"+s.Name, "--timeout=60s")

		obj := &corev1.Node{}
		if err := c.Client.Get(ctx, client.ObjectKey{Name: node.Name}, obj); err != nil {
			t.Fatal(err)
		}
		if ok, _ := nodelabel.State(obj, s.Name); !ok {
			t.Errorf("node not labelled for %s: %v", s.Name, obj.Labels)
		}
		rc := &nodev1.RuntimeClass{}
		if err := c.Client.Get(ctx, client.ObjectKey{Name: s.Spec.RuntimeClass.Name}, rc); err != nil || rc.Handler != s.Spec.RuntimeClass.Handler {
			t.Fatalf("RuntimeClass %s: %v %+v", s.Spec.RuntimeClass.Name, err, rc)
		}
		waitFor(t, 60*time.Second, "runtimeHandlers to list "+s.Spec.RuntimeClass.Handler, func() bool {
			_ = c.Client.Get(ctx, client.ObjectKey{Name: node.Name}, obj)
			return slices.ContainsFunc(obj.Status.RuntimeHandlers, func(h corev1.NodeRuntimeHandler) bool { return h.Name == s.Spec.RuntimeClass.Handler })
		})
		exe := runPod(t, c, node, "pod-"+s.Name, s.Spec.RuntimeClass.Name)
		if want := resolved(t, node, "/opt/shimkit/"+s.Name+"/current/containerd-shim-"+s.Spec.RuntimeClass.Handler+"-v2"); exe != want {
			t.Errorf("the pod's shim is %s, want the installed %s", exe, want)
		}
	}

	// The canary ran by default (the installer's image, "shimkit-installer
	// canary", with the Shim's handler) before the node was labelled.
	if r := installerResult(t, c, "e2e"); r.CanaryDuration <= 0 {
		t.Errorf("the install of e2e ran no canary: %+v", r)
	} else {
		t.Logf("the canary of e2e passed in %v", time.Duration(r.CanaryDuration))
	}
	installerTokenOnlyCanaries(t, c, node)
	driftRepaired(t, c, node, origConfig)

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
	waitUpgraded(t, c, node, s, oldHash)
	if bin, _ := os.ReadFile(node.Local("/opt/shimkit/e2e/current/containerd-shim-e2e-v2")); !bytes.Equal(bin, v2.Binary) {
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
	obj := &corev1.Node{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: node.Name}, obj); err != nil {
		t.Fatal(err)
	}
	for k := range obj.Labels {
		if strings.HasPrefix(k, nodelabel.Prefix) {
			t.Errorf("node label %s left", k)
		}
	}
	if got, _ := os.ReadFile(node.Local("/etc/containerd/config.toml")); !bytes.Equal(got, origConfig) {
		t.Errorf("node config not restored:\n%s", got)
	}
	if _, err := os.Stat(node.Local("/opt/shimkit")); !os.IsNotExist(err) {
		t.Errorf("/opt/shimkit left on the node: %v", err)
	}
}

// waitUpgraded waits until the Shim s (updated with a new spec, away from
// oldHash) is installed at its new spec hash on node.
func waitUpgraded(t *testing.T, c *testutil.Cluster, node testutil.ClusterNode, s *v1alpha1.Shim, oldHash string) {
	t.Helper()
	ctx := context.Background()
	waitFor(t, 180*time.Second, "the upgrade of "+s.Name, func() bool {
		_ = c.Client.Get(ctx, client.ObjectKeyFromObject(s), s)
		obj := &corev1.Node{}
		_ = c.Client.Get(ctx, client.ObjectKey{Name: node.Name}, obj)
		_, hash := nodelabel.State(obj, s.Name)
		return s.Status.SpecHash != oldHash && hash == s.Status.SpecHash && s.Status.UpdatedNodes == 1
	})
}

// runPod runs a host-network pause pod with the RuntimeClass and returns
// the path of the shim binary that runs its sandbox, as the node sees it.
func runPod(t *testing.T, c *testutil.Cluster, node testutil.ClusterNode, name, runtimeClass string) string {
	t.Helper()
	pod := workloadPod(name, "", runtimeClass) // scheduled by its RuntimeClass
	if err := c.Client.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	p := c.WaitPodRunning(t, "default", name)
	id := strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")
	exe, ok := testutil.ShimOf(podSandboxOf(t, node, id))
	if !ok {
		t.Fatalf("no shim process for pod %s", name)
	}
	return exe
}

// podSandboxOf asks the node's CRI for the sandbox of a container.
func podSandboxOf(t *testing.T, node testutil.ClusterNode, containerID string) string {
	t.Helper()
	out, err := exec.Command("/usr/bin/ctr", "--address", node.Socket(), "-n", "k8s.io", "containers", "info", containerID).Output()
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

// installerResult is the NodeResult of the latest install Job of a Shim,
// from its pod's termination message.
func installerResult(t *testing.T, c *testutil.Cluster, shim string) *plan.NodeResult {
	t.Helper()
	pods := &corev1.PodList{}
	if err := c.Client.List(context.Background(), pods, client.InNamespace("shimkit-system"),
		client.MatchingLabels{"shim.containerd.x-k8s.io/shim": shim, "shim.containerd.x-k8s.io/op": "install"}); err != nil {
		t.Fatal(err)
	}
	var latest *corev1.Pod
	for k := range pods.Items {
		p := &pods.Items[k]
		if latest == nil || latest.CreationTimestamp.Before(&p.CreationTimestamp) {
			latest = p
		}
	}
	if latest == nil || len(latest.Status.ContainerStatuses) == 0 || latest.Status.ContainerStatuses[0].State.Terminated == nil {
		t.Fatalf("no finished installer pod of %s: %+v", shim, latest)
	}
	r, err := plan.DecodeResult([]byte(latest.Status.ContainerStatuses[0].State.Terminated.Message))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// installerTokenOnlyCanaries: the installers' ServiceAccount may create
// canary pods, and the admission policy refuses anything else it asks for
// (here a pod that mounts the node's root).
func installerTokenOnlyCanaries(t *testing.T, c *testutil.Cluster, node testutil.ClusterNode) {
	t.Helper()
	pod := func(extra string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {generateName: probe-, namespace: shimkit-system, labels: {shimkit.dev/canary: e2e}}
spec:
  nodeName: %s
  runtimeClassName: shimkit-canary-e2e
  automountServiceAccountToken: false
  restartPolicy: Never
  containers: [{name: canary, image: %s, args: [canary]}]
%s`, node.Name, installerImage, extra)
	}
	as := "--as=system:serviceaccount:shimkit-system:shimkit-installer"
	create := func(manifest string) (string, error) {
		f := filepath.Join(t.TempDir(), "pod.yaml")
		writeFile(t, f, manifest)
		out, err := exec.Command(c.Kubectl, "--kubeconfig", c.Kubeconfig, as, "create", "-f", f, "-o", "name").CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	name, err := create(pod(""))
	if err != nil {
		t.Fatalf("the installer may create a canary pod: %v %s", err, name)
	}
	kubectl(t, c, "-n", "shimkit-system", "delete", name, "--wait=false")
	out, err := create(pod("  volumes: [{name: root, hostPath: {path: /}}]\n"))
	if err == nil || !strings.Contains(out, "mounts no volumes") {
		t.Errorf("a hostPath pod by the installer's token: %v %s", err, out)
	}
	out, err = create(strings.Replace(pod(""), "shimkit-canary-e2e", "e2e", 1))
	if err == nil || !strings.Contains(out, "canary RuntimeClass") {
		t.Errorf("a pod of another RuntimeClass by the installer's token: %v %s", err, out)
	}
}

// driftRepaired: config management puts containerd's config back as it
// was before shimkit and restarts containerd; the kubelet stops reporting
// the Shims' handlers, the operator counts the node as drifted, installs
// the Shims there again, and the handlers are back.
func driftRepaired(t *testing.T, c *testutil.Cluster, node testutil.ClusterNode, origConfig []byte) {
	t.Helper()
	ctx := context.Background()
	writeFile(t, node.Local("/etc/containerd/config.toml"), string(origConfig))
	dropIns, _ := filepath.Glob(node.Local("/etc/containerd/conf.d/*shimkit*"))
	for _, f := range dropIns {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := node.Exec(ctx, "systemctl", "restart", "containerd"); err != nil {
		t.Fatalf("restart containerd: %v %s", err, out)
	}
	start := time.Now()
	sawDrift := false
	last := ""
	deadline := time.Now().Add(180 * time.Second)
	for {
		ok := true
		last = ""
		for _, name := range []string{"e2e", "e2eoci"} {
			s := &v1alpha1.Shim{}
			obj := &corev1.Node{}
			if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, s); err != nil {
				ok, last = false, err.Error()
				break
			}
			if err := c.Client.Get(ctx, client.ObjectKey{Name: node.Name}, obj); err != nil {
				ok, last = false, err.Error()
				break
			}
			sawDrift = sawDrift || s.Status.DriftedNodes > 0
			served := slices.ContainsFunc(obj.Status.RuntimeHandlers, func(h corev1.NodeRuntimeHandler) bool { return h.Name == name })
			ok = ok && served && s.Status.DriftedNodes == 0 && s.Status.UpdatedNodes == 1
			last += fmt.Sprintf("%s: served %v, drifted %d, updated %d; ", name, served, s.Status.DriftedNodes, s.Status.UpdatedNodes)
		}
		if ok && !sawDrift {
			// The drifted count lasts from the reconcile that sees the
			// drift to the one that sees its repair Job, which can be
			// shorter than a poll: the Drifted Events stay.
			out := kubectl(t, c, "get", "events", "--field-selector", "reason=Drifted", "-o", "jsonpath={.items[*].involvedObject.name}")
			sawDrift = strings.Contains(" "+out+" ", " e2e ") && strings.Contains(" "+out+" ", " e2eoci ")
		}
		if ok && sawDrift {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for both Shims repaired (drift seen: %v): %s", sawDrift, last)
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("drift repaired %v after containerd came back without the handlers", time.Since(start).Round(time.Second))
	if out := kubectl(t, c, "get", "events", "--field-selector", "reason=Drifted", "-o", "name"); strings.TrimSpace(out) == "" {
		t.Error("no Drifted event")
	}
}
