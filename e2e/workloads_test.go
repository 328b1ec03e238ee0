package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/installer/plan"
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
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": name}},
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
//   - keep (a renamed runc shim) is installed, two pods run with it, and
//     keep is upgraded under them: their shims run on from the earlier
//     bundle version, which stays;
//   - keep's selector leaves the node: the node keeps its label, gets
//     keep's fence taint, and its kubelet restarted kills no pod; selected
//     again, the taint goes;
//   - the Shim is deleted: the node waits (Ready and Reconciling say
//     HandlerInUse naming the pods); the node keeps the label the pods
//     were admitted with, the RuntimeClass is fenced (a new pod of it
//     stays Pending), and the kubelet restarted kills no pod (same
//     containers, no restart); the handler, the link and both bundle
//     versions stay;
//   - meanwhile exec into a pod works, and its container, killed, is
//     restarted by the kubelet with the handler;
//   - one pod is deleted: it goes within 60 s, its container with it;
//     the node still waits for the other;
//   - deletePolicy Evict, the other pod under a PodDisruptionBudget that
//     allows no disruption: the eviction is refused (EvictionBlocked,
//     quoting the budget) and the pod runs on; once the budget allows
//     one (minAvailable 0), the pod is evicted, the node uninstalled, the RuntimeClass
//     deleted last, and the node is as it was (config byte for byte, no
//     bundle, no label, no shim process).
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
	cids := map[string]string{}
	for _, name := range []string{"keeper-1", "keeper-2"} {
		if err := c.Client.Create(ctx, keeperPod(name, node)); err != nil {
			t.Fatal(err)
		}
		running := c.WaitPodRunning(t, "default", name)
		cids[name] = strings.TrimPrefix(running.Status.ContainerStatuses[0].ContainerID, "containerd://")
	}
	stuckShimRefused(t, c, node, podSandboxOf(t, node, cids["keeper-2"]))
	v1Dir := resolved(t, node, "/opt/shimkit/keep/current")
	upgradeUnder(t, c, node, shim, srv.Add("/keep-2.tar.gz", v2.Data), v2.SHA256, v1Dir, cids["keeper-1"])
	leftWhileRunning(t, c, node, cids)

	// Delete the Shim: the node waits for the pods, saying so.
	if err := c.Client.Delete(ctx, shim); err != nil {
		t.Fatal(err)
	}
	waitInUse(t, c, "node "+node.Name+": default/keeper-1, default/keeper-2")
	n := &corev1.Node{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: node.Name}, n); err != nil || n.Labels["shim.containerd.x-k8s.io/keep"] != "installed" {
		t.Errorf("the node's label while it waits: %q (%v), want installed (the pods were admitted with it)", n.Labels["shim.containerd.x-k8s.io/keep"], err)
	}
	fencedWhileWaiting(t, c, node, cids)
	time.Sleep(11 * time.Second) // past a recheck (decide.InUseRecheck): it holds
	for _, p := range []string{v1Dir + "/containerd-shim-keep-v2", "/opt/shimkit/keep/current/containerd-shim-keep-v2"} {
		if _, err := os.Stat(node.Local(p)); err != nil {
			t.Errorf("%s while the pods run: %v", p, err)
		}
	}
	if cfg, _ := os.ReadFile(node.Local("/etc/containerd/config.toml")); bytes.Equal(cfg, orig) {
		t.Error("the handler left containerd's config while the pods run")
	}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: "keep"}, &nodev1.RuntimeClass{}); err != nil {
		t.Errorf("RuntimeClass keep while the Shim waits: %v", err)
	}
	servedWhileWaiting(t, c, node, "keeper-1", cids["keeper-1"])

	// One pod deleted: promptly gone, its container with it.
	start := time.Now()
	if err := c.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "keeper-1"}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "keeper-1 gone", func() bool {
		return apierrors.IsNotFound(c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "keeper-1"}, &corev1.Pod{}))
	})
	t.Logf("keeper-1 deleted in %v", time.Since(start).Round(100*time.Millisecond))
	waitFor(t, 30*time.Second, "keeper-1's containers gone", func() bool {
		out, _ := exec.Command("/usr/bin/ctr", "--address", node.Socket(), "-n", "k8s.io", "tasks", "ls", "-q").Output()
		return !strings.Contains(string(out), cids["keeper-1"])
	})
	waitInUse(t, c, "node "+node.Name+": default/keeper-2")

	evictUnderBudget(t, c, "keeper-2")
	start = time.Now()
	waitFor(t, 180*time.Second, "the Shim keep gone", func() bool {
		return apierrors.IsNotFound(c.Client.Get(ctx, client.ObjectKey{Name: "keep"}, &v1alpha1.Shim{}))
	})
	t.Logf("the Shim gone %v after the budget allowed the eviction", time.Since(start).Round(100*time.Millisecond))
	if procs := processesRunning(v1Dir, "/opt/shimkit/keep"); len(procs) > 0 {
		t.Errorf("processes of keep's bundle left: %v", procs)
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

// stuckShimRefused: keeper-2's shim stopped (SIGSTOP), a change of keep
// that needs containerd restarted fails on the node with ShimStuck,
// naming the pod, with containerd not restarted and its config as it
// was; the shim let go on, the change taken back, keep is Ready again and
// the pod runs on.
func stuckShimRefused(t *testing.T, c *testutil.Cluster, node testutil.ClusterNode, sandbox string) {
	t.Helper()
	ctx := context.Background()
	cfg, _ := os.ReadFile(node.Local("/etc/containerd/config.toml"))
	starts := node.ContainerdStarts(t)
	pid := testutil.ShimPID(t, sandbox)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	cont := func() { _ = syscall.Kill(pid, syscall.SIGCONT) }
	defer cont()
	// A second handler of the bundle's shim: containerd's config changes.
	kubectl(t, c, "patch", "shim", "keep", "--type=merge", "-p", `{"spec":{"handlers":[{"runtimeClass":{"name":"keep-two","handler":"keep-two"},"runtimeType":"io.containerd.keep.v2"}]}}`)
	var f v1alpha1.NodeFailure
	waitFor(t, 120*time.Second, "keep failing on the stuck shim", func() bool {
		s := &v1alpha1.Shim{}
		if c.Client.Get(ctx, client.ObjectKey{Name: "keep"}, s) != nil || len(s.Status.FailingNodes) == 0 {
			return false
		}
		f = s.Status.FailingNodes[0]
		return true
	})
	t.Logf("failing: %s: %s", f.Reason, f.Message)
	// (The installer names the pid as the node sees it: this node has a
	// PID namespace of its own.)
	if f.Node != node.Name || f.Reason != string(plan.ReasonShimStuck) || !strings.Contains(f.Message, "containerd-shim-keep-v2 (T (stopped), pod default/keeper-2)") {
		t.Errorf("failing node %+v, want %s ShimStuck naming default/keeper-2's shim", f, node.Name)
	}
	if got := node.ContainerdStarts(t); got != starts {
		t.Errorf("containerd started %d times with a shim stopped", got-starts)
	}
	if got, _ := os.ReadFile(node.Local("/etc/containerd/config.toml")); !bytes.Equal(got, cfg) {
		t.Errorf("config after the refusal:\n%s", got)
	}
	cont()
	kubectl(t, c, "patch", "shim", "keep", "--type=json", "-p", `[{"op":"remove","path":"/spec/handlers"}]`)
	kubectl(t, c, "wait", "--for=condition=Ready", "shim/keep", "--timeout=60s")
	if out := kubectl(t, c, "exec", "keeper-2", "--", "/bin/busybox", "echo", "alive"); strings.TrimSpace(out) != "alive" {
		t.Errorf("exec into keeper-2 after its shim went on: %q", out)
	}
}

// upgradeUnder upgrades keep to the artifact at url while a pod runs
// from v1Dir: the pod's shim runs on from v1, which stays.
func upgradeUnder(t *testing.T, c *testutil.Cluster, node testutil.ClusterNode, shim *v1alpha1.Shim, url, sha, v1Dir, cid string) {
	t.Helper()
	ctx := context.Background()
	if err := c.Client.Get(ctx, client.ObjectKeyFromObject(shim), shim); err != nil {
		t.Fatal(err)
	}
	oldHash := shim.Status.SpecHash
	shim.Spec.FetchStrategy.AnonHTTP = &v1alpha1.AnonHTTPFetch{Location: url, SHA256: sha}
	if err := c.Client.Update(ctx, shim); err != nil {
		t.Fatal(err)
	}
	waitUpgraded(t, c, node, shim, oldHash)
	exe, ok := testutil.ShimOf(podSandboxOf(t, node, cid))
	if !ok || !strings.HasPrefix(exe, v1Dir+"/") {
		t.Errorf("the pod's shim runs %q, want one of %s", exe, v1Dir)
	}
	if _, err := os.Stat(node.Local(exe)); err != nil || resolved(t, node, "/opt/shimkit/keep/current") == v1Dir {
		t.Errorf("after the upgrade under the pod: its shim's binary %v; current is still v1: %v", err, resolved(t, node, "/opt/shimkit/keep/current") == v1Dir)
	}
}

// fencedWhileWaiting: while the deleted Shim waits for the pods (cids:
// their containers by pod), a new pod of its RuntimeClass is not
// scheduled (the RuntimeClass selects no node), and the node's kubelet,
// restarted, re-admits the running pods: none is killed or restarted.
func fencedWhileWaiting(t *testing.T, c *testutil.Cluster, node testutil.ClusterNode, cids map[string]string) {
	t.Helper()
	ctx := context.Background()
	late := keeperPod("keeper-late", node)
	late.Spec.NodeName = "" // scheduled, not bound: the RuntimeClass's selector decides
	late.Spec.NodeSelector = nil
	if err := c.Client.Create(ctx, late); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Client.Delete(ctx, late, client.GracePeriodSeconds(0)) }()
	kubeletRestartKillsNone(t, c, node, cids)
	// The scheduler looked at the new pod and found no node.
	waitFor(t, 30*time.Second, "keeper-late Unschedulable", func() bool {
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(late), late); err != nil {
			return false
		}
		for _, cond := range late.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
				return true
			}
		}
		return false
	})
	if late.Spec.NodeName != "" || late.Spec.NodeSelector["shim.containerd.x-k8s.io/keep"] != "fenced" {
		t.Errorf("a new pod of the fenced RuntimeClass: node %q, selector %v; want none, the fenced one", late.Spec.NodeName, late.Spec.NodeSelector)
	}
}

// kubeletRestartKillsNone restarts the node's kubelet and checks that
// the pods (cids: their containers by pod) run on in the same containers,
// never restarted: the kubelet re-admitted them against the node as it is.
func kubeletRestartKillsNone(t *testing.T, c *testutil.Cluster, node testutil.ClusterNode, cids map[string]string) {
	t.Helper()
	ctx := context.Background()
	restarted := time.Now()
	if out, err := node.Exec(ctx, "systemctl", "restart", node.KubeletUnit()); err != nil {
		t.Fatalf("restart the kubelet: %v: %s", err, out)
	}
	waitFor(t, 90*time.Second, "the restarted kubelet renewing its node's lease", func() bool { return leaseRenewed(c, node.Name).After(restarted) })
	// The kubelet admits the pods it finds as it starts; one whose node
	// selector the node no longer matches is killed then (NodeAffinity).
	time.Sleep(10 * time.Second)
	for name, cid := range cids {
		p := &corev1.Pod{}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, p); err != nil {
			t.Fatal(err)
		}
		cs := p.Status.ContainerStatuses
		if p.Status.Phase != corev1.PodRunning || len(cs) != 1 || cs[0].RestartCount != 0 || strings.TrimPrefix(cs[0].ContainerID, "containerd://") != cid {
			t.Errorf("%s after the kubelet's restart: %s %s, containers %+v; want Running, container %s, no restart", name, p.Status.Phase, p.Status.Reason, cs, cid)
		}
	}
}

// leftWhileRunning: keep's selector no longer selects the node while the
// pods run: the node keeps its label and gets keep's fence taint; its
// kubelet, restarted, kills no pod; selected again, it loses the taint
// and keeps the shim (keep Ready again).
func leftWhileRunning(t *testing.T, c *testutil.Cluster, node testutil.ClusterNode, cids map[string]string) {
	t.Helper()
	ctx := context.Background()
	kubectl(t, c, "patch", "shim", "keep", "--type=merge", "-p", `{"spec":{"nodeSelector":{"kubernetes.io/hostname":"no-such-node"}}}`)
	fence := corev1.Taint{Key: "shim.containerd.x-k8s.io/keep", Value: "fenced", Effect: corev1.TaintEffectNoSchedule}
	fenced := func() bool {
		n := &corev1.Node{}
		return c.Client.Get(ctx, client.ObjectKey{Name: node.Name}, n) == nil && slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.MatchTaint(&fence) && t.Value == fence.Value }) &&
			n.Labels["shim.containerd.x-k8s.io/keep"] == "installed"
	}
	waitFor(t, 60*time.Second, "the node fenced by keep's taint, its label kept", fenced)
	kubeletRestartKillsNone(t, c, node, cids)
	if !fenced() {
		t.Error("the node's fence or label changed while the pods run")
	}
	kubectl(t, c, "patch", "shim", "keep", "--type=merge", "-p", `{"spec":{"nodeSelector":{"kubernetes.io/hostname":"`+node.Name+`"}}}`)
	waitFor(t, 60*time.Second, "the fence gone once the node is selected again", func() bool { return !fenced() })
	kubectl(t, c, "wait", "--for=condition=Ready", "shim/keep", "--timeout=60s")
}

// leaseRenewed is when the node's kubelet last renewed its Lease (zero:
// not read).
func leaseRenewed(c *testutil.Cluster, node string) time.Time {
	l := &coordinationv1.Lease{}
	if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: corev1.NamespaceNodeLease, Name: node}, l); err != nil || l.Spec.RenewTime == nil {
		return time.Time{}
	}
	return l.Spec.RenewTime.Time
}

// waitInUse waits until keep's Ready and Reconciling say HandlerInUse with
// a message that contains note.
func waitInUse(t *testing.T, c *testutil.Cluster, note string) {
	t.Helper()
	var ready metav1.Condition
	waitFor(t, 60*time.Second, "HandlerInUse: "+note, func() bool {
		s := &v1alpha1.Shim{}
		if c.Client.Get(context.Background(), client.ObjectKey{Name: "keep"}, s) != nil {
			return false
		}
		ready = ptr.Deref(meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReady), metav1.Condition{})
		rec := ptr.Deref(meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReconciling), metav1.Condition{})
		return ready.Reason == v1alpha1.ReasonHandlerInUse && rec.Reason == v1alpha1.ReasonHandlerInUse && strings.Contains(ready.Message, note)
	})
	t.Logf("waiting: %s", ready.Message)
}

// servedWhileWaiting: exec into the pod works, and its container, killed,
// is restarted by the kubelet.
func servedWhileWaiting(t *testing.T, c *testutil.Cluster, node testutil.ClusterNode, pod, cid string) {
	t.Helper()
	if out := kubectl(t, c, "exec", pod, "--", "/bin/busybox", "echo", "alive"); strings.TrimSpace(out) != "alive" {
		t.Errorf("exec: %q", out)
	}
	if out, err := exec.Command("/usr/bin/ctr", "--address", node.Socket(), "-n", "k8s.io", "tasks", "kill", "-s", "SIGKILL", cid).CombinedOutput(); err != nil {
		t.Fatalf("killing the container: %v\n%s", err, out)
	}
	waitFor(t, 60*time.Second, "the killed container restarted", func() bool {
		p := &corev1.Pod{}
		if c.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: pod}, p) != nil || len(p.Status.ContainerStatuses) == 0 {
			return false
		}
		st := p.Status.ContainerStatuses[0]
		return st.RestartCount >= 1 && st.State.Running != nil
	})
}

// evictUnderBudget sets keep's deletePolicy to Evict with the pod under a
// PodDisruptionBudget that allows no disruption: the eviction is refused,
// said in an EvictionBlocked Event, and the pod runs on; then the budget
// allows one, and the pod is evicted.
func evictUnderBudget(t *testing.T, c *testutil.Cluster, pod string) {
	t.Helper()
	ctx := context.Background()
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: pod},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": pod}}}}
	if err := c.Client.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Client.Delete(context.Background(), pdb) })
	waitFor(t, 30*time.Second, "the budget observed", func() bool {
		return c.Client.Get(ctx, client.ObjectKeyFromObject(pdb), pdb) == nil && pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.CurrentHealthy == 1
	})
	kubectl(t, c, "patch", "shim", "keep", "--type=merge", "-p", `{"spec":{"deletePolicy":"Evict"}}`)
	var blocked string
	waitFor(t, 60*time.Second, "EvictionBlocked", func() bool {
		evs := &corev1.EventList{}
		if c.Client.List(ctx, evs, client.MatchingFields{"reason": "EvictionBlocked"}) != nil {
			return false
		}
		for _, e := range evs.Items {
			if strings.Contains(e.Message, "default/"+pod) {
				blocked = e.Message
				return true
			}
		}
		return false
	})
	t.Logf("blocked: %s", blocked)
	if !strings.Contains(blocked, "disruption budget") {
		t.Errorf("EvictionBlocked does not quote the budget: %s", blocked)
	}
	p := &corev1.Pod{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: pod}, p); err != nil || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		t.Errorf("%s under a budget that allows nothing: %v %s deleting %v", pod, err, p.Status.Phase, p.DeletionTimestamp != nil)
	}
	// A bare pod's budget counts with minAvailable only (maxUnavailable
	// needs the pods' controller): 0 allows one disruption.
	patch := client.MergeFrom(pdb.DeepCopy())
	zero := intstr.FromInt32(0)
	pdb.Spec.MinAvailable = &zero
	if err := c.Client.Patch(ctx, pdb, patch); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitFor(t, 60*time.Second, pod+" evicted", func() bool {
		return apierrors.IsNotFound(c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: pod}, &corev1.Pod{}))
	})
	t.Logf("%s evicted and gone %v after the budget allowed it", pod, time.Since(start).Round(100*time.Millisecond))
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
