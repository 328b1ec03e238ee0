package e2e

import (
	"bytes"
	"context"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/frontend/plugin"
	"github.com/shimkit/shimkit/internal/frontend/report"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// poolLabel selects the nodes of the rollout scenarios (a node pool's).
const poolLabel = "shimkit.test/pool"

// readyMarker is the node file the "flaky" shim needs to start.
const readyMarker = "/etc/shimkit-e2e/ready"

// testNodes: rollouts watched on several real kubelets and containerds,
// the nodes given (a pool's):
//   - two Shims created together, maxUpdate 1: one installer run and one
//     containerd restart per node for both (the units' journals), and no
//     two nodes restart containerd at once (the units' own timestamps);
//   - a shim that crashes on start fails its canary on the first node (the
//     failure quotes the kubelet's FailedCreatePodSandBox), the rollout
//     halts there with the other nodes untouched, and a change of
//     spec.canary resumes it once the nodes are fixed;
//   - a node taken out of the selector is uninstalled;
//   - a node that joins (with the startup taint) gets the three shims
//     from one installer run (one containerd restart), then loses the
//     taint;
//   - deleting the Shims leaves every node as it was.
func testNodes(t *testing.T, c *testutil.Cluster, dump *dumper, nodes []testutil.ClusterNode, build testutil.ContainerdBuild, images []string) {
	ctx := context.Background()
	pool := map[string]string{poolLabel: "fleet"}
	for _, n := range nodes {
		kubectl(t, c, "label", "node", n.Name, poolLabel+"=fleet")
	}
	orig := nodeConfigs(t, nodes)
	srv := c.StartFileServer(t)
	runcShim := build.Binary("containerd-shim-runc-v2")

	// Two Shims together, one node at a time: one installer run and one
	// containerd restart per node for both.
	starts := make([]int, len(nodes))
	for i, n := range nodes {
		starts[i] = n.ContainerdStarts(t)
	}
	fleet, duo := poolShim(t, srv, runcShim, "fleet", pool), poolShim(t, srv, runcShim, "duo", pool)
	// fleet's RuntimeClasses select a label of the pool's own domain, as
	// a Karpenter NodePool can declare it (not shimkit's k8s.io one).
	fleet.Spec.SchedulingLabel = fleetScheduling
	start := time.Now()
	for _, s := range []*v1alpha1.Shim{fleet, duo} {
		if err := c.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	kubectl(t, c, "wait", "--for=condition=Ready", "shim/fleet", "shim/duo", "--timeout=180s")
	t.Logf("fleet and duo Ready on %d nodes, maxUpdate 1: %v", len(nodes), time.Since(start).Round(time.Second))
	after := restartWindows(t, nodes)
	for i, n := range nodes {
		if got := n.ContainerdStarts(t) - starts[i]; got != 1 {
			t.Errorf("containerd on %s started %d times for the two Shims, want once", n.Name, got)
		}
		t.Logf("%s: containerd restarting for %v", n.Name, time.Duration(after[i].enter-after[i].exit)*time.Microsecond)
	}
	assertDisjoint(t, nodes, after)
	for _, n := range nodes {
		assertLabelled(t, c, n.Name, "fleet", true)
		assertLabelled(t, c, n.Name, "duo", true)
		node := &corev1.Node{}
		if err := c.Client.Get(ctx, client.ObjectKey{Name: n.Name}, node); err != nil || node.Labels[fleetScheduling] != nodelabel.Installed {
			t.Errorf("%s: labels %v (%v), want fleet's scheduling label %s installed", n.Name, node.Labels, err, fleetScheduling)
		}
	}

	// A shim that crashes on start until the node is fixed, two nodes at
	// a time.
	stalledAt := nodeConfigs(t, nodes)
	before := restartWindows(t, nodes)
	flaky := flakyShim(t, srv, runcShim, pool)
	two := intstr.FromInt32(2)
	flaky.Spec.RolloutStrategy = &v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutRolling, Rolling: &v1alpha1.RollingUpdate{MaxUpdate: &two}}
	if err := c.Client.Create(ctx, flaky); err != nil {
		t.Fatal(err)
	}
	kubectl(t, c, "wait", "--for=condition=Stalled", "shim/flaky", "--timeout=180s")
	// The rollout halts at the first failure; the other node started with
	// it finishes its own canary (each waits up to its timeout), so the
	// two failures land one after the other.
	waitFor(t, 3*time.Minute, "both nodes of the first step to fail", func() bool {
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(flaky), flaky); err != nil {
			t.Fatal(err)
		}
		return len(flaky.Status.FailingNodes) >= 2
	})
	time.Sleep(3 * time.Second) // the halt holds: nothing else starts
	if err := c.Client.Get(ctx, client.ObjectKeyFromObject(flaky), flaky); err != nil {
		t.Fatal(err)
	}
	failing := flaky.Status.FailingNodes
	if len(failing) != 2 || failing[0].Reason != string(plan.ReasonCanaryFailed) || failing[1].Reason != string(plan.ReasonCanaryFailed) {
		t.Fatalf("failing nodes %+v, want two with CanaryFailed", failing)
	}
	failed := map[string]bool{failing[0].Node: true, failing[1].Node: true}
	t.Logf("flaky halted on %s and %s: %s", failing[0].Node, failing[1].Node, failing[0].Message)
	// Why, from the kubelet's events: the runtime could not start the
	// sandbox (the wrapper exits before the runc shim).
	if !strings.Contains(failing[0].Message, "FailedCreatePodSandBox") {
		t.Errorf("the canary's failure does not say why: %s", failing[0].Message)
	}
	now := restartWindows(t, nodes)
	for i, n := range nodes {
		assertLabelled(t, c, n.Name, "flaky", false)
		cfg, _ := os.ReadFile(n.Local("/etc/containerd/config.toml"))
		if !bytes.Equal(cfg, stalledAt[i]) {
			t.Errorf("%s: config changed by the halted rollout:\n%s", n.Name, cfg)
		}
		if _, err := os.Stat(n.Local("/opt/shimkit/flaky")); !os.IsNotExist(err) {
			t.Errorf("%s: the crashing shim's bundle is there: %v", n.Name, err)
		}
		if restarted := now[i].enter != before[i].enter; restarted != failed[n.Name] {
			t.Errorf("%s: containerd restarted %v during the halted rollout (failed nodes %v)", n.Name, restarted, failed)
		}
	}
	failedLogs(t, c, failing[0].Node)
	rerunOne(t, c, nodes, failing[0].Node, failing[1].Node)
	for _, n := range nodes {
		if err := os.MkdirAll(filepath.Dir(n.Local(readyMarker)), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, n.Local(readyMarker), "fixed\n")
	}
	// kubectl shimkit status shows the failed node and why, the other
	// waiting; its plan of the change below names the nodes the operator
	// then starts first.
	var st report.StatusReport
	kubectlShimkit(t, c, &st, "status", "flaky")
	for _, r := range st.Nodes {
		if r.Node == failing[0].Node && r.State != report.StateCurrent || r.Node == failing[1].Node && (r.State != report.StateFailed || r.Reason != string(plan.ReasonCanaryFailed)) ||
			!failed[r.Node] && r.State != report.StatePending {
			t.Errorf("kubectl shimkit status flaky: %+v (%s retried, %s failed)", r, failing[0].Node, failing[1].Node)
		}
	}
	timeout := &metav1.Duration{Duration: 40 * time.Second}
	planned := planChange(t, c, "flaky", func(s *v1alpha1.Shim) {
		if s.Spec.Canary == nil {
			s.Spec.Canary = &v1alpha1.Canary{}
		}
		s.Spec.Canary.Timeout = timeout
	})
	changed := time.Now()
	// A node whose canary failed is tried again when the canary changes
	// (the retry annotation would do too): here it gets more time.
	kubectl(t, c, "patch", "shim", "flaky", "--type=merge", "-p", `{"spec":{"canary":{"timeout":"40s"}}}`)
	assertFirstJobs(t, c, "flaky", changed, planned)
	kubectl(t, c, "wait", "--for=condition=Ready", "shim/flaky", "--timeout=180s")
	for _, n := range nodes {
		assertLabelled(t, c, n.Name, "flaky", true)
	}
	logCanaries(t, c, "fleet", "flaky")

	// A node leaves the pool: the shims go from it, its config as before.
	leaving := nodes[2]
	kubectl(t, c, "label", "node", leaving.Name, poolLabel+"-")
	waitFor(t, 120*time.Second, "the shims to leave "+leaving.Name, func() bool {
		node := &corev1.Node{}
		_ = c.Client.Get(ctx, client.ObjectKey{Name: leaving.Name}, node)
		return !hasShimLabels(node)
	})
	if cfg, _ := os.ReadFile(leaving.Local("/etc/containerd/config.toml")); !bytes.Equal(cfg, orig[2]) {
		t.Errorf("%s: config after the uninstall:\n%s", leaving.Name, cfg)
	}
	if _, err := os.Stat(leaving.Local("/opt/shimkit")); !os.IsNotExist(err) {
		t.Errorf("%s: /opt/shimkit left after the uninstall: %v", leaving.Name, err)
	}

	// A node joins the pool as an autoscaler makes it: tainted until its
	// runtimes are there, with fleet's scheduling label declared by its
	// node pool (what lets Karpenter place a pending pod of fleet's
	// RuntimeClass on it). The label is not taken as an install; the pod, created before
	// the node existed, waits, then runs there on the installed handler.
	// Its image installs the pool's three Shims at boot (boot-units, the
	// plans their installer Jobs carried): containerd starts once, with the
	// handlers, and the operator's installer run restarts nothing.
	waiting := workloadPod("autoscaled", "", "fleet")
	waiting.Spec.NodeSelector = map[string]string{autoscaledLabel: "yes"}
	if err := c.Client.Create(ctx, waiting); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	declared := maps.Clone(pool)
	declared[autoscaledLabel], declared[fleetScheduling] = "yes", nodelabel.Installed
	files, exes := bootImage(t, c, declared, fleet, duo, flaky)
	files[readyMarker] = []byte("fixed\n")
	joined := c.AddNode(t, testutil.JoinOptions{
		Labels:      declared,
		Taints:      []string{operator.PendingTaint + ":NoSchedule"},
		Files:       files,
		Executables: exes,
		Images:      images,
	})
	dump.onFailure(t) // (while the joined node is there)
	waitFor(t, 180*time.Second, "the joined node to get both shims and lose its taint", func() bool {
		node := &corev1.Node{}
		_ = c.Client.Get(ctx, client.ObjectKey{Name: joined.Name}, node)
		ok1, _ := nodelabel.State(node, "fleet")
		ok2, _ := nodelabel.State(node, "flaky")
		ok3, _ := nodelabel.State(node, "duo")
		tainted := slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == operator.PendingTaint })
		recorded := nodelabel.VerificationOf(node, "fleet", fleet.UID) != nil
		if tainted && !recorded {
			if p := podOf(t, c, waiting.Name); p.Spec.NodeName != "" {
				t.Fatalf("the waiting pod was bound to %s before fleet was installed there", p.Spec.NodeName)
			}
		}
		return ok1 && ok2 && ok3 && !tainted && recorded
	})
	t.Logf("%s joined and got the three shims in %v; its taint lifted %v after it was Ready", joined.Name, time.Since(start).Round(time.Second),
		time.Since(readySince(t, c, joined.Name)).Round(time.Second))
	// Its boot, with the three Shims installed before containerd started;
	// the operator's installer run changed nothing.
	if got := joined.ContainerdStarts(t); got != 1 {
		t.Errorf("containerd on the joined node %s started %d times, want once (its boot, the Shims installed before it)\n%s", joined.Name, got, joined.Journal("shimkit-boot"))
	}
	ran := c.WaitPodRunning(t, "default", waiting.Name)
	if ran.Spec.NodeName != joined.Name || len(ran.Status.ContainerStatuses) != 1 || ran.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("the waiting pod: node %s, containers %+v; want %s, one container never restarted", ran.Spec.NodeName, ran.Status.ContainerStatuses, joined.Name)
	}
	if err := c.Client.Delete(ctx, waiting, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}

	// Delete: every node as it was.
	for _, s := range []*v1alpha1.Shim{fleet, duo, flaky} {
		if err := c.Client.Delete(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []*v1alpha1.Shim{fleet, duo, flaky} {
		waitFor(t, 180*time.Second, "shim "+s.Name+" gone", func() bool {
			return apierrors.IsNotFound(c.Client.Get(ctx, client.ObjectKeyFromObject(s), &v1alpha1.Shim{}))
		})
	}
	for i, n := range append(nodes, joined) {
		want := testutil.ClusterContainerdConfig(build) // the joined node's: as it booted
		if i < len(orig) {
			want = orig[i]
		}
		if cfg, _ := os.ReadFile(n.Local("/etc/containerd/config.toml")); !bytes.Equal(cfg, want) {
			t.Errorf("%s: config after the Shims' deletion:\n%s", n.Name, cfg)
		}
		if _, err := os.Stat(n.Local("/opt/shimkit")); !os.IsNotExist(err) {
			t.Errorf("%s: /opt/shimkit left: %v", n.Name, err)
		}
		node := &corev1.Node{}
		if err := c.Client.Get(ctx, client.ObjectKey{Name: n.Name}, node); err != nil || hasShimLabels(node) {
			t.Errorf("%s: shim labels left: %v %v", n.Name, node.Labels, err)
		}
	}
}

// poolShim is a Shim of the pool's nodes named name (and its handler),
// the runc shim in a bundle of its own.
func poolShim(t *testing.T, srv *testutil.FileServer, runcShim, name string, pool map[string]string) *v1alpha1.Shim {
	a := testutil.NewShimArchive(t, name, runcShim, nil)
	return &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.ShimSpec{
		NodeSelector:  pool,
		FetchStrategy: v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{Location: srv.Add("/"+name+".tar.gz", a.Data), SHA256: a.SHA256}},
		RuntimeClass:  v1alpha1.RuntimeClassSpec{Name: name, Handler: name},
	}}
}

// flakyShim is a shim whose start fails until readyMarker exists on the
// node: a wrapper in front of the runc shim, in one bundle.
func flakyShim(t *testing.T, srv *testutil.FileServer, runcShim string, nodeSelector map[string]string) *v1alpha1.Shim {
	t.Helper()
	runc, err := os.ReadFile(runcShim)
	if err != nil {
		t.Fatal(err)
	}
	wrapper := "#!/bin/sh\n[ -e " + readyMarker + " ] || { echo 'flaky: this node is not ready' >&2; exit 1; }\nexec $(BUNDLE_DIR)/runc-shim \"$@\"\n"
	a := testutil.NewArchive(t,
		testutil.ArchiveFile{Name: "containerd-shim-flaky-v2", Mode: 0o755, Data: []byte(wrapper)},
		testutil.ArchiveFile{Name: "runc-shim", Mode: 0o755, Data: runc},
	)
	return &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "flaky"}, Spec: v1alpha1.ShimSpec{
		NodeSelector:  nodeSelector,
		FetchStrategy: v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{Location: srv.Add("/flaky.tar.gz", a.Data), SHA256: a.SHA256}},
		RuntimeClass:  v1alpha1.RuntimeClassSpec{Name: "flaky", Handler: "flaky"},
		Files: []v1alpha1.BundleFile{
			{Path: "containerd-shim-flaky-v2", Mode: ptr.To[int32](0o755), Substitute: true},
			{Path: "runc-shim", Mode: ptr.To[int32](0o755)},
		},
		// kubelet retries a sandbox that fails to start: the canary ends
		// with its timeout.
		Canary: &v1alpha1.Canary{Timeout: &metav1.Duration{Duration: 30 * time.Second}},
	}}
}

// logCanaries logs how long the shims' latest canaries took per node.
func logCanaries(t *testing.T, c *testutil.Cluster, shims ...string) {
	t.Helper()
	pods := &corev1.PodList{}
	if err := c.Client.List(context.Background(), pods, client.InNamespace("shimkit-system"), client.MatchingLabels{"shim.containerd.x-k8s.io/op": "install"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if !slices.Contains(shims, p.Labels["shim.containerd.x-k8s.io/shim"]) || len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Terminated == nil {
			continue
		}
		rs, err := plan.DecodeResults([]byte(p.Status.ContainerStatuses[0].State.Terminated.Message))
		if err != nil {
			continue
		}
		for _, r := range rs {
			if slices.Contains(shims, r.Shim.Name) {
				t.Logf("%s on %s: canary %v", r.Shim.Name, p.Spec.NodeName, time.Duration(r.CanaryDuration).Round(time.Millisecond))
			}
		}
	}
	// What kept a canary pod waiting: the kubelet's Events about it.
	evs := &corev1.EventList{}
	if err := c.Client.List(context.Background(), evs, client.InNamespace("shimkit-system")); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		// (Not the kubelets' advisory on every pod of the harness, nor the
		// canaries of the other scenarios' Shims.)
		ours := slices.ContainsFunc(shims, func(s string) bool { return strings.HasPrefix(e.InvolvedObject.Name, "shimkit-canary-"+s+"-") })
		if ours && e.Reason != "MissingClusterDNS" && (e.Type == corev1.EventTypeWarning || e.Reason == "BackOff") {
			t.Logf("canary %s: %s %s ×%d (%s – %s): %s", e.InvolvedObject.Name, e.Type, e.Reason, e.Count, e.FirstTimestamp.Format(time.TimeOnly), e.LastTimestamp.Format(time.TimeOnly), e.Message)
		}
	}
}

// window is when a node's containerd last stopped and was active again,
// in µs of the monotonic clock all the nodes share with this machine.
type window struct{ exit, enter int64 }

func restartWindows(t *testing.T, nodes []testutil.ClusterNode) []window {
	t.Helper()
	var out []window
	for _, n := range nodes {
		b, err := n.Exec(context.Background(), "systemctl", "show", "containerd", "-p", "ActiveExitTimestampMonotonic", "-p", "ActiveEnterTimestampMonotonic")
		if err != nil {
			t.Fatalf("%s: systemctl show: %v %s", n.Name, err, b)
		}
		props := map[string]int64{}
		for _, line := range strings.Fields(string(b)) {
			k, v, _ := strings.Cut(line, "=")
			props[k], _ = strconv.ParseInt(v, 10, 64)
		}
		out = append(out, window{exit: props["ActiveExitTimestampMonotonic"], enter: props["ActiveEnterTimestampMonotonic"]})
	}
	return out
}

// assertDisjoint fails when two nodes' containerd restarts overlapped.
func assertDisjoint(t *testing.T, nodes []testutil.ClusterNode, w []window) {
	t.Helper()
	for i := range w {
		for j := i + 1; j < len(w); j++ {
			if w[i].exit < w[j].enter && w[j].exit < w[i].enter {
				t.Errorf("containerd restarted at once on %s %+v and %s %+v", nodes[i].Name, w[i], nodes[j].Name, w[j])
			}
		}
	}
}

func nodeConfigs(t *testing.T, nodes []testutil.ClusterNode) [][]byte {
	t.Helper()
	var out [][]byte
	for _, n := range nodes {
		b, err := os.ReadFile(filepath.Join(n.Root, "etc/containerd/config.toml"))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func assertLabelled(t *testing.T, c *testutil.Cluster, node, shim string, want bool) {
	t.Helper()
	n := &corev1.Node{}
	if err := c.Client.Get(context.Background(), client.ObjectKey{Name: node}, n); err != nil {
		t.Fatal(err)
	}
	if ok, _ := nodelabel.State(n, shim); ok != want {
		t.Errorf("%s labelled for %s: %v, want %v", node, shim, ok, want)
	}
}

// fleetScheduling is the scheduling label of the nodes scenario's fleet
// Shim (spec.schedulingLabel).
const fleetScheduling = "pool.example/fleet"

// hasShimLabels: the node has a label of shimkit's or fleet's
// scheduling label.
func hasShimLabels(n *corev1.Node) bool {
	for k := range n.Labels {
		if strings.HasPrefix(k, nodelabel.Prefix) || k == fleetScheduling {
			return true
		}
	}
	return false
}

// failedLogs: kubectl shimkit logs prints the failed node's installer log
// from its pod (through the API server and the node's kubelet), and once
// its Job is gone, from the operator's copy.
func failedLogs(t *testing.T, c *testutil.Cluster, node string) {
	t.Helper()
	code, out, _ := shimkit(t, c, "logs", "flaky", "--node", node)
	if code != plugin.ExitOK || !strings.Contains(out, "shimkit-installer: CanaryFailed: install flaky: failed and rolled back") {
		t.Errorf("logs of %s while its Job is kept: exit %d, want its canary's failure", node, code)
	}
	// Kept: the copy, then the Job marked (by the next operator, when the
	// drain scenario's restart of it came in between).
	jobs := &batchv1.JobList{}
	waitFor(t, 60*time.Second, "flaky's failed Job on "+node+" kept", func() bool {
		err := c.Client.List(context.Background(), jobs, client.InNamespace("shimkit-system"), client.MatchingLabels{jobview.LabelShim: "flaky", jobview.LabelNode: jobview.LabelValue(node)})
		return err == nil && len(jobs.Items) == 1 && jobs.Items[0].Annotations[jobview.AnnotationLogKept] != ""
	})
	job := &jobs.Items[0]
	if ttl := job.Spec.TTLSecondsAfterFinished; ttl == nil || *ttl != 86400 {
		t.Errorf("the failed Job %s is kept %v s, want a day", job.Name, ttl)
	}
	kubectl(t, c, "-n", "shimkit-system", "delete", "job", job.Name, "--cascade=foreground")
	code, out, errOut := shimkit(t, c, "logs", "flaky", "--node", node)
	if code != plugin.ExitOK || !strings.Contains(out, "shimkit-installer: CanaryFailed: install flaky: failed and rolled back") || !strings.Contains(errOut, "the operator's copy of the log of Job "+job.Name) {
		t.Errorf("logs of %s once its Job is gone: exit %d, want the operator's copy with its canary's failure", node, code)
	}
}

// rerunOne: with node fixed and other not, kubectl shimkit rerun of node
// installs it at once, and only it: other stays failed, and its failure
// still halts the rollout for every other node.
func rerunOne(t *testing.T, c *testutil.Cluster, nodes []testutil.ClusterNode, node, other string) {
	t.Helper()
	if code, _, errOut := shimkit(t, c, "rerun", "flaky", "--node", "no-such-node"); code != plugin.ExitFailed || !strings.Contains(errOut, "neither selects it") {
		t.Errorf("rerun of an unknown node: exit %d, %s", code, errOut)
	}
	for _, n := range nodes {
		if n.Name == node {
			if err := os.MkdirAll(filepath.Dir(n.Local(readyMarker)), 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, n.Local(readyMarker), "fixed\n")
		}
	}
	if code, out, _ := shimkit(t, c, "rerun", "flaky", "--node", node); code != plugin.ExitOK || !strings.Contains(out, "node "+node+" retried") {
		t.Fatalf("rerun %s: exit %d", node, code)
	}
	waitFor(t, 120*time.Second, node+" installed by the rerun", func() bool {
		n := &corev1.Node{}
		_ = c.Client.Get(context.Background(), client.ObjectKey{Name: node}, n)
		ok, _ := nodelabel.State(n, "flaky")
		return ok
	})
	if code, _, errOut := shimkit(t, c, "rerun", "flaky", "--node", node); code != plugin.ExitFailed || !strings.Contains(errOut, "has not failed") {
		t.Errorf("a second rerun of %s: exit %d, %s; want it refused", node, code, errOut)
	}
	time.Sleep(3 * time.Second) // the halt holds: nothing else starts
	s := &v1alpha1.Shim{}
	if err := c.Client.Get(context.Background(), client.ObjectKey{Name: "flaky"}, s); err != nil {
		t.Fatal(err)
	}
	if len(s.Status.FailingNodes) != 1 || s.Status.FailingNodes[0].Node != other {
		t.Errorf("after the rerun of %s: failing %+v, want %s alone", node, s.Status.FailingNodes, other)
	}
	jobs := &batchv1.JobList{}
	if err := c.Client.List(context.Background(), jobs, client.InNamespace("shimkit-system"), client.MatchingLabels{jobview.LabelShim: "flaky"}); err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs.Items {
		if n := jobview.NodeOf(&j); n != node && n != other {
			t.Errorf("Job %s on %s after the rerun of %s alone", j.Name, n, node)
		}
	}
}

// autoscaledLabel marks the node the nodes scenario joins as a node pool's.
const autoscaledLabel = "shimkit.test/autoscaled"

// podOf reads a pod of the default namespace.
func podOf(t *testing.T, c *testutil.Cluster, name string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{}
	if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// readySince is when the node's Ready condition last became true.
func readySince(t *testing.T, c *testutil.Cluster, name string) time.Time {
	t.Helper()
	node := &corev1.Node{}
	if err := c.Client.Get(context.Background(), client.ObjectKey{Name: name}, node); err != nil {
		t.Fatal(err)
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
			return cond.LastTransitionTime.Time
		}
	}
	t.Fatalf("node %s is not Ready", name)
	return time.Time{}
}

// bootImage is what a node image of the pool declared by labels carries
// to install the Shims at boot: the installer, its units, and the plan
// kubectl shimkit boot-plan prints for the pool, at each Shim's current
// revision (the one its status names).
func bootImage(t *testing.T, c *testutil.Cluster, declared map[string]string, shims ...*v1alpha1.Shim) (files, exes map[string][]byte) {
	t.Helper()
	args := []string{"boot-plan", "--labels", labels.Set(declared).String(), "--arch", runtime.GOARCH, "--runtime", "containerd"}
	for _, s := range shims {
		args = append(args, s.Name)
	}
	code, doc, _ := shimkit(t, c, args...)
	plans, err := plan.DecodePlans([]byte(doc))
	if code != plugin.ExitOK || err != nil || len(plans) != len(shims) {
		t.Fatalf("boot-plan: exit %d, %d plans (%v)", code, len(plans), err)
	}
	for _, p := range plans {
		cur := &v1alpha1.Shim{}
		if err := c.Client.Get(context.Background(), client.ObjectKey{Name: p.Shim.Name}, cur); err != nil {
			t.Fatal(err)
		}
		if p.SpecHash != cur.Status.SpecHash {
			t.Fatalf("boot-plan of Shim %s at %s; its status says %s", p.Shim.Name, p.SpecHash, cur.Status.SpecHash)
		}
	}
	return testutil.BootImage(t, []byte(doc), "containerd")
}
