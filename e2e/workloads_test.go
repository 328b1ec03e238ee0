package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// keepShim is a renamed runc shim (handler keep) on the node.
func keepShim(url, sha string, node testutil.ClusterNode) *v1alpha1.Shim {
	return &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "keep"}, Spec: v1alpha1.ShimSpec{
		NodeSelector:  onNode(node),
		FetchStrategy: v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{Location: url, SHA256: sha}},
		RuntimeClass:  v1alpha1.RuntimeClassSpec{Name: "keep", Handler: "keep"},
	}}
}

// keeperPod runs busybox with the keep RuntimeClass on the node, restarted
// when its container dies.
func keeperPod(name string, node testutil.ClusterNode) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:                      node.Name,
			RuntimeClassName:              ptr.To("keep"),
			TerminationGracePeriodSeconds: ptr.To(int64(1)),
			RestartPolicy:                 corev1.RestartPolicyAlways,
			Containers: []corev1.Container{{Name: "sh", Image: testutil.BusyboxImageRef, ImagePullPolicy: corev1.PullNever,
				Command: []string{"/bin/busybox", "sh", "-c", "echo started; sleep 3600"}}},
		},
	}
}

// testWorkloads: a Shim deleted while its pods run never breaks them.
//   - keep (a renamed runc shim) is installed, a pod runs with it, and
//     keep is upgraded under it: the pod's shim runs on from the earlier
//     bundle version, which stays;
//   - the Shim is deleted: the node waits (Ready and Reconciling say
//     HandlerInUse naming the pod; the node's label turns to uninstalling),
//     the handler, the link and both bundle versions stay;
//   - meanwhile exec into the pod works, and its container, killed,
//     is restarted by the kubelet with the handler;
//   - the pod is deleted: it goes within 60 s, with no container and no
//     shim process left; then the uninstall runs, the RuntimeClass goes
//     last, and the node is as it was (config byte for byte, no bundle,
//     no label).
func testWorkloads(t *testing.T, c *testutil.Cluster, node testutil.ClusterNode, build testutil.ContainerdBuild) {
	ctx := context.Background()
	testutil.ImportBusybox(t, "/usr/bin/ctr", node.Socket())
	orig, err := os.ReadFile(node.Local("/etc/containerd/config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	srv := c.StartFileServer(t)
	v1 := testutil.NewShimArchive(t, "keep", build.Binary("containerd-shim-runc-v2"), nil)
	v2 := testutil.NewShimArchive(t, "keep", build.Binary("containerd-shim-runc-v2"), map[string]string{"VERSION": "2\n"})
	shim := keepShim(srv.Add("/keep-1.tar.gz", v1.Data), v1.SHA256, node)
	if err := c.Client.Create(ctx, shim); err != nil {
		t.Fatal(err)
	}
	kubectl(t, c, "wait", "--for=condition=Ready", "shim/keep", "--timeout=120s")
	if err := c.Client.Create(ctx, keeperPod("keeper", node)); err != nil {
		t.Fatal(err)
	}
	running := c.WaitPodRunning(t, "default", "keeper")
	cid := strings.TrimPrefix(running.Status.ContainerStatuses[0].ContainerID, "containerd://")
	v1Dir := resolved(t, node, "/opt/shimkit/keep/current")

	// Upgrade under the pod: v1 stays while the pod's shim runs from it.
	if err := c.Client.Get(ctx, client.ObjectKeyFromObject(shim), shim); err != nil {
		t.Fatal(err)
	}
	oldHash := shim.Status.SpecHash
	shim.Spec.FetchStrategy.AnonHTTP = &v1alpha1.AnonHTTPFetch{Location: srv.Add("/keep-2.tar.gz", v2.Data), SHA256: v2.SHA256}
	if err := c.Client.Update(ctx, shim); err != nil {
		t.Fatal(err)
	}
	waitUpgraded(t, c, node, shim, oldHash)
	exe, ok := testutil.ShimOf(podSandboxOf(t, node, cid))
	if !ok || !strings.HasPrefix(exe, v1Dir+"/") {
		t.Errorf("the pod's shim runs %q, want one of %s", exe, v1Dir)
	}
	if _, err := os.Stat(node.Local(exe)); err != nil || resolved(t, node, "/opt/shimkit/keep/current") == v1Dir {
		t.Errorf("after the upgrade under the pod: its shim's binary %v; current is v1: %v", err, resolved(t, node, "/opt/shimkit/keep/current") == v1Dir)
	}

	// Delete the Shim: the node waits for the pod, saying so.
	if err := c.Client.Delete(ctx, shim); err != nil {
		t.Fatal(err)
	}
	var ready metav1.Condition
	waitFor(t, 60*time.Second, "HandlerInUse naming default/keeper", func() bool {
		s := &v1alpha1.Shim{}
		if c.Client.Get(ctx, client.ObjectKeyFromObject(shim), s) != nil {
			return false
		}
		ready = ptr.Deref(meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReady), metav1.Condition{})
		rec := ptr.Deref(meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReconciling), metav1.Condition{})
		return ready.Reason == v1alpha1.ReasonHandlerInUse && rec.Reason == v1alpha1.ReasonHandlerInUse &&
			strings.Contains(ready.Message, "node "+node.Name+": default/keeper")
	})
	t.Logf("deleted while its pod runs: %s", ready.Message)
	n := &corev1.Node{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: node.Name}, n); err != nil || n.Labels["shim.containerd.x-k8s.io/keep"] != "uninstalling" {
		t.Errorf("the node's label while it waits: %q (%v), want uninstalling", n.Labels["shim.containerd.x-k8s.io/keep"], err)
	}
	time.Sleep(15 * time.Second) // past a recheck: it holds
	for _, p := range []string{"/usr/local/bin/containerd-shim-keep-v2", v1Dir, "/opt/shimkit/keep/current"} {
		if _, err := os.Stat(node.Local(p)); err != nil {
			t.Errorf("%s while the pod runs: %v", p, err)
		}
	}
	if cfg, _ := os.ReadFile(node.Local("/etc/containerd/config.toml")); bytes.Equal(cfg, orig) {
		t.Error("the handler left containerd's config while the pod runs")
	}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: "keep"}, &nodev1.RuntimeClass{}); err != nil {
		t.Errorf("RuntimeClass keep while the Shim waits: %v", err)
	}

	// The pod is served: exec, and a killed container restarts.
	if out := kubectl(t, c, "exec", "keeper", "--", "/bin/busybox", "echo", "alive"); strings.TrimSpace(out) != "alive" {
		t.Errorf("exec: %q", out)
	}
	if out, err := exec.Command("/usr/bin/ctr", "--address", node.Socket(), "-n", "k8s.io", "tasks", "kill", "-s", "SIGKILL", cid).CombinedOutput(); err != nil {
		t.Fatalf("killing the container: %v\n%s", err, out)
	}
	waitFor(t, 60*time.Second, "the killed container restarted", func() bool {
		p := &corev1.Pod{}
		if c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "keeper"}, p) != nil || len(p.Status.ContainerStatuses) == 0 {
			return false
		}
		st := p.Status.ContainerStatuses[0]
		return st.RestartCount >= 1 && st.State.Running != nil
	})

	// The pod goes: promptly, leaving no container or shim process; then
	// the node is uninstalled and the Shim goes.
	start := time.Now()
	if err := c.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "keeper"}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the pod gone", func() bool {
		return apierrors.IsNotFound(c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "keeper"}, &corev1.Pod{}))
	})
	t.Logf("the pod deleted in %v", time.Since(start).Round(100*time.Millisecond))
	waitFor(t, 180*time.Second, "the Shim keep gone", func() bool {
		return apierrors.IsNotFound(c.Client.Get(ctx, client.ObjectKey{Name: "keep"}, &v1alpha1.Shim{}))
	})
	t.Logf("the Shim gone %v after its last pod", time.Since(start).Round(100*time.Millisecond))
	if procs := processesRunning(v1Dir, node.Local(v1Dir)); len(procs) > 0 {
		t.Errorf("processes of keep's bundle left: %v", procs)
	}
	if out, _ := exec.Command("/usr/bin/ctr", "--address", node.Socket(), "-n", "k8s.io", "tasks", "ls", "-q").Output(); strings.Contains(string(out), cid) {
		t.Errorf("the pod's container still has a task: %s", out)
	}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: "keep"}, &nodev1.RuntimeClass{}); !apierrors.IsNotFound(err) {
		t.Errorf("RuntimeClass keep after the Shim: %v", err)
	}
	if cfg, _ := os.ReadFile(node.Local("/etc/containerd/config.toml")); !bytes.Equal(cfg, orig) {
		t.Errorf("config after the uninstall:\n%s", cfg)
	}
	for _, p := range []string{"/opt/shimkit", "/usr/local/bin/containerd-shim-keep-v2"} {
		if _, err := os.Lstat(node.Local(p)); !os.IsNotExist(err) {
			t.Errorf("%s left: %v", p, err)
		}
	}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: node.Name}, n); err != nil || n.Labels["shim.containerd.x-k8s.io/keep"] != "" {
		t.Errorf("the node's label after the uninstall: %q (%v)", n.Labels["shim.containerd.x-k8s.io/keep"], err)
	}
}

// processesRunning are the processes whose executable lies under one of
// dirs (a node's processes name their files as the node sees them).
func processesRunning(dirs ...string) []int {
	var out []int
	exes, _ := filepath.Glob("/proc/[0-9]*/exe")
	for _, link := range exes {
		exe, err := os.Readlink(link)
		if err != nil {
			continue
		}
		for _, d := range dirs {
			if strings.HasPrefix(exe, d+"/") {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(link)))
				out = append(out, pid)
			}
		}
	}
	return out
}
