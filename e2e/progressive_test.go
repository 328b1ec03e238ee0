package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/frontend/plugin"
	"github.com/shimkit/shimkit/internal/frontend/report"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// progressiveLabel selects the nodes of the progressive-delivery scenario.
const progressiveLabel = "shimkit.test/progressive"

// gatedWrapper passes every start to the runc shim of its bundle; with
// canaryOnly it refuses to start the sandbox of any pod outside
// shimkit-system: a shim that passes its canary and fails the workloads
// after it. containerd runs "<shim> ... start" in the bundle's directory,
// whose config.json carries the CRI's sandbox annotations.
func gatedWrapper(canaryOnly bool) string {
	check := ""
	if canaryOnly {
		check = `for a; do last=$a; done
if [ "$last" = start ] && grep -q '"io.kubernetes.cri.container-type":"sandbox"' config.json &&
   ! grep -q '"io.kubernetes.cri.sandbox-namespace":"shimkit-system"' config.json; then
	echo "gated: this build serves only the canary" >&2
	exit 1
fi
`
	}
	return "#!/bin/sh\n" + check + "exec $(BUNDLE_DIR)/runc-shim \"$@\"\n"
}

// gatedShim is the Shim "gated" of the scenario's nodes, its bundle the
// wrapper and the runc shim, served at a path of its own (a new spec).
func gatedShim(t *testing.T, srv *testutil.FileServer, runc []byte, version string, canaryOnly bool) v1alpha1.ShimSpec {
	t.Helper()
	a := testutil.NewArchive(t,
		testutil.ArchiveFile{Name: "containerd-shim-gated-v2", Mode: 0o755, Data: []byte(gatedWrapper(canaryOnly))},
		testutil.ArchiveFile{Name: "runc-shim", Mode: 0o755, Data: runc},
	)
	three := intstr.FromInt32(3)
	return v1alpha1.ShimSpec{
		NodeSelector:  map[string]string{progressiveLabel: "yes"},
		FetchStrategy: v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{Location: srv.Add("/gated-"+version+".tar.gz", a.Data), SHA256: a.SHA256}},
		RuntimeClass:  v1alpha1.RuntimeClassSpec{Name: "gated", Handler: "gated"},
		Files: []v1alpha1.BundleFile{
			{Path: "containerd-shim-gated-v2", Mode: ptr.To[int32](0o755), Substitute: true},
			{Path: "runc-shim", Mode: ptr.To[int32](0o755)},
		},
		RolloutStrategy: &v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutRolling, Rolling: &v1alpha1.RollingUpdate{MaxUpdate: &three}},
	}
}

// testProgressive: progressive delivery on real kubelets and containerds.
//   - v1 of a shim rolls out to the three nodes; a pod of its
//     RuntimeClass runs on each;
//   - v2, staged [1 node, bake; 100%], passes its canary on the first
//     node, then fails the workload pods there (their sandboxes): the
//     health gate halts the rollout (WorkloadFailures) with the other two
//     nodes untouched (their containerd units not restarted);
//   - onFailure: Revert puts the first node back on v1: its bundle and
//     containerd config byte-identical to before the upgrade, its v1 pod
//     still running as it was (Reverted);
//   - a paused Shim starts nothing (no installer Job of its spec, no
//     file changed, no restart); unpaused outside its maintenance window
//     it waits (WaitingForWindow, nextWindow) with nothing started, and
//     its first installer Job starts within 30 s after the window opens
//     (a real one, a minute or two on).
func testProgressive(t *testing.T, c *testutil.Cluster, nodes []testutil.ClusterNode, build testutil.ContainerdBuild) {
	ctx := context.Background()
	for _, n := range nodes {
		kubectl(t, c, "label", "node", n.Name, progressiveLabel+"=yes")
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			kubectl(t, c, "label", "node", n.Name, progressiveLabel+"-")
		}
	})
	runc, err := os.ReadFile(build.Binary("containerd-shim-runc-v2"))
	if err != nil {
		t.Fatal(err)
	}
	srv := c.StartFileServer(t)

	shim := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "gated"}, Spec: gatedShim(t, srv, runc, "v1", false)}
	if err := c.Client.Create(ctx, shim); err != nil {
		t.Fatal(err)
	}
	kubectl(t, c, "wait", "--for=condition=Ready", "shim/gated", "--timeout=180s")
	v1 := getShimStatus(t, c, "gated")
	before := map[string]map[string][]byte{}
	keepers := map[string]string{}
	for _, n := range nodes {
		before[n.Name] = nodeFiles(t, n.Node, "gated")
		keepers[n.Name] = runPodOn(t, c, "keeper-"+n.Name, n.Name, "gated")
	}
	starts := restartWindows(t, nodes)

	// v2, staged: the first node passes its canary, then its workloads fail.
	v2 := gatedShim(t, srv, runc, "v2", true)
	v2.RolloutStrategy.Steps = []v1alpha1.RolloutStep{{Nodes: intstr.FromInt32(1), Bake: &metav1.Duration{Duration: 10 * time.Minute}}, {Nodes: intstr.FromString("100%")}}
	updateSpec(t, c, "gated", func(s *v1alpha1.ShimSpec) { *s = v2 })
	var first string
	waitFor(t, 180*time.Second, "v2's first step to bake", func() bool {
		s := getShimStatus(t, c, "gated")
		first = nodeAt(t, c, "gated", s.SpecHash)
		return s.SpecHash != v1.SpecHash && conditionReason(s, v1alpha1.ConditionReconciling) == v1alpha1.ReasonBaking && first != ""
	})
	t.Logf("v2 on %s (canary passed), baking", first)
	if err := c.Client.Create(ctx, workloadPod("web-1", first, "gated")); err != nil {
		t.Fatal(err)
	}
	kubectl(t, c, "wait", "--for=condition=Stalled", "shim/gated", "--timeout=120s")
	s := getShimStatus(t, c, "gated")
	deg := ptr.Deref(meta.FindStatusCondition(s.Conditions, v1alpha1.ConditionDegraded), metav1.Condition{})
	t.Logf("halted: %s", deg.Message)
	if deg.Reason != v1alpha1.ReasonWorkloadFailures || !strings.Contains(deg.Message, "default/web-1") || !strings.Contains(deg.Message, first) {
		t.Errorf("Degraded %s: %s; want WorkloadFailures naming default/web-1 on %s", deg.Reason, deg.Message, first)
	}
	time.Sleep(3 * time.Second) // the halt holds
	// The other nodes untouched: containerd not restarted, the bundle and
	// config as they were. (The first node's containerd needed no restart:
	// v2 changed the bundle only, and its current link moved.)
	now := restartWindows(t, nodes)
	for i, n := range nodes {
		files := nodeFiles(t, n.Node, "gated")
		if n.Name == first {
			if bytes.Equal(files["/opt/shimkit/gated/current"], before[n.Name]["/opt/shimkit/gated/current"]) {
				t.Errorf("%s: v2's bundle is not current", n.Name)
			}
			continue
		}
		if now[i].enter != starts[i].enter {
			t.Errorf("%s: containerd restarted during the halted rollout (v2's node %s)", n.Name, first)
		}
		assertSameFiles(t, n.Name, before[n.Name], files)
	}

	// Revert: the first node back on v1, byte for byte; its v1 pod ran on.
	kubectl(t, c, "patch", "shim", "gated", "--type=merge", "-p", `{"spec":{"rolloutStrategy":{"onFailure":"Revert"}}}`)
	waitFor(t, 180*time.Second, "the revert", func() bool {
		return conditionReason(getShimStatus(t, c, "gated"), v1alpha1.ConditionReady) == v1alpha1.ReasonReverted
	})
	for _, n := range nodes {
		assertSameFiles(t, n.Name, before[n.Name], nodeFiles(t, n.Node, "gated"))
		p := &corev1.Pod{}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "keeper-" + n.Name}, p); err != nil || p.Status.Phase != corev1.PodRunning ||
			p.Status.ContainerStatuses[0].ContainerID != keepers[n.Name] || p.Status.ContainerStatuses[0].RestartCount != 0 {
			t.Errorf("%s: the v1 pod did not keep running: %v %+v", n.Name, err, p.Status)
		}
	}
	if s := getShimStatus(t, c, "gated"); s.SpecHash != v1.SpecHash || s.UpdatedNodes != 3 {
		t.Errorf("after the revert: specHash %s (v1 %s), %d nodes updated", s.SpecHash, v1.SpecHash, s.UpdatedNodes)
	}
	kubectl(t, c, "delete", "pod", "web-1", "--wait=false")

	// Paused: nothing starts (no installer Job of v3, no file changed);
	// then unpaused with a window a minute or two on: nothing starts
	// before it opens, and the first Job starts once it has.
	starts = restartWindows(t, nodes)
	for _, n := range nodes {
		before[n.Name] = nodeFiles(t, n.Node, "gated")
	}
	// Paused by kubectl shimkit pause, which the spec change keeps.
	if code, out, _ := shimkit(t, c, "pause", "gated"); code != plugin.ExitOK || !strings.Contains(out, "gated paused") {
		t.Fatalf("kubectl shimkit pause: exit %d", code)
	}
	v3 := gatedShim(t, srv, runc, "v3", false)
	v3.RolloutStrategy.Steps = []v1alpha1.RolloutStep{{Nodes: intstr.FromInt32(1), Bake: &metav1.Duration{Duration: 20 * time.Second}}, {Nodes: intstr.FromString("100%")}}
	updateSpec(t, c, "gated", func(s *v1alpha1.ShimSpec) {
		paused := s.RolloutStrategy.Paused
		*s = v3
		s.RolloutStrategy.Paused = paused
	})
	var v3Hash string
	waitFor(t, 30*time.Second, "Paused", func() bool {
		s := getShimStatus(t, c, "gated")
		v3Hash = s.SpecHash
		return conditionReason(s, v1alpha1.ConditionReady) == v1alpha1.ReasonPaused
	})
	if v3Hash == v1.SpecHash {
		t.Fatalf("v3 has v1's spec hash %s", v3Hash)
	}
	time.Sleep(5 * time.Second) // a paused Shim's reconciles pass
	assertNothingStarted(t, c, nodes, v3Hash, before, starts, "while paused")
	planExitCodes(t, c, "gated")
	// The next minute at least 12s on (what is checked before it opens
	// takes a few seconds); resumed by kubectl shimkit resume.
	open := time.Now().UTC().Add(72 * time.Second).Truncate(time.Minute)
	window := fmt.Sprintf(`{"spec":{"rolloutStrategy":{"windows":[{"start":%q,"end":%q}]}}}`, open.Format("15:04"), open.Add(10*time.Minute).Format("15:04"))
	kubectl(t, c, "patch", "shim", "gated", "--type=merge", "-p", window)
	if code, out, _ := shimkit(t, c, "resume", "gated"); code != plugin.ExitOK || !strings.Contains(out, "gated resumed") || !strings.Contains(out, "Next: at "+open.Format(time.RFC3339)) {
		t.Errorf("kubectl shimkit resume: exit %d, want the next wave at %s", code, open.Format(time.RFC3339))
	}
	waitFor(t, 30*time.Second, "WaitingForWindow", func() bool {
		s := getShimStatus(t, c, "gated")
		return conditionReason(s, v1alpha1.ConditionReady) == v1alpha1.ReasonWaitingForWindow && s.Rollout != nil && s.Rollout.NextWindow != nil
	})
	if s := getShimStatus(t, c, "gated"); !s.Rollout.NextWindow.Time.Equal(open) || s.SpecHash != v3Hash {
		t.Errorf("nextWindow %s, want %s; specHash %s, want v3's %s (a window is not a new spec)", s.Rollout.NextWindow.Time, open, s.SpecHash, v3Hash)
	}
	time.Sleep(time.Until(open) - 2*time.Second)
	assertNothingStarted(t, c, nodes, v3Hash, before, starts, "before the window opened")
	planBakeHolds(t, c, nodes, v3Hash)
	kubectl(t, c, "wait", "--for=condition=Ready", "shim/gated", "--timeout=180s")
	// On time: the first of v3's Jobs started once the window was open,
	// within the reconcile the operator schedules for the opening.
	first3 := time.Time{}
	for _, j := range installJobsAt(t, c, "gated", v3Hash) {
		if first3.IsZero() || j.Before(first3) {
			first3 = j
		}
	}
	if first3.Before(open) || first3.After(open.Add(30*time.Second)) {
		t.Errorf("v3's first installer Job started at %s; the window opened at %s", first3, open)
	} else {
		t.Logf("the window opened at %s; v3's first installer Job %s after it", open, first3.Sub(open))
	}
	for _, n := range nodes {
		_ = c.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "keeper-" + n.Name}})
	}
	if err := c.Client.Delete(ctx, shim); err != nil {
		t.Fatal(err)
	}
	// The nodes scenario runs on these nodes next and counts their
	// containerd restarts and reads their configs: the Shim's uninstall
	// (after v3's installs in flight) ends first, as every scenario leaves
	// the cluster as it found it.
	waitFor(t, 180*time.Second, "the Shim gated gone", func() bool {
		return apierrors.IsNotFound(c.Client.Get(ctx, client.ObjectKeyFromObject(shim), &v1alpha1.Shim{}))
	})
}

// assertNothingStarted fails t when an installer Job of the spec hash
// exists, or a node's containerd restarted or its files changed since.
func assertNothingStarted(t *testing.T, c *testutil.Cluster, nodes []testutil.ClusterNode, hash string, files map[string]map[string][]byte, starts []window, when string) {
	t.Helper()
	if jobs := installJobsAt(t, c, "gated", hash); len(jobs) > 0 {
		t.Errorf("%d installer Jobs of spec %s started %s", len(jobs), hash, when)
	}
	now := restartWindows(t, nodes)
	for i, n := range nodes {
		if now[i].enter != starts[i].enter {
			t.Errorf("%s: containerd restarted %s", n.Name, when)
		}
		assertSameFiles(t, n.Name, files[n.Name], nodeFiles(t, n.Node, "gated"))
	}
}

// installJobsAt returns when each install Job of the Shim's spec hash was
// created (the operator's own stamp, AnnotationCreated, to the nanosecond).
func installJobsAt(t *testing.T, c *testutil.Cluster, shim, hash string) []time.Time {
	t.Helper()
	jobs := &batchv1.JobList{}
	if err := c.Client.List(context.Background(), jobs, client.InNamespace("shimkit-system"),
		client.MatchingLabels{jobview.LabelOp: jobview.OpInstall, jobview.LabelShim: shim, jobview.LabelSpecHash: hash}); err != nil {
		t.Fatal(err)
	}
	var at []time.Time
	for _, j := range jobs.Items {
		created, err := time.Parse(time.RFC3339Nano, j.Annotations[jobview.AnnotationCreated])
		if err != nil {
			t.Fatalf("Job %s: %s: %v", j.Name, jobview.AnnotationCreated, err)
		}
		at = append(at, created)
	}
	return at
}

func getShimStatus(t *testing.T, c *testutil.Cluster, name string) v1alpha1.ShimStatus {
	t.Helper()
	s := &v1alpha1.Shim{}
	if err := c.Client.Get(context.Background(), client.ObjectKey{Name: name}, s); err != nil {
		t.Fatal(err)
	}
	if s.Status.ObservedGeneration != s.Generation {
		return v1alpha1.ShimStatus{}
	}
	return s.Status
}

// conditionReason is the reason of the status's condition typ ("": none).
func conditionReason(s v1alpha1.ShimStatus, typ string) string {
	if c := meta.FindStatusCondition(s.Conditions, typ); c != nil {
		return c.Reason
	}
	return ""
}

func updateSpec(t *testing.T, c *testutil.Cluster, name string, change func(*v1alpha1.ShimSpec)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s := &v1alpha1.Shim{}
		if err := c.Client.Get(context.Background(), client.ObjectKey{Name: name}, s); err != nil {
			return err
		}
		change(&s.Spec)
		return c.Client.Update(context.Background(), s)
	})
	if err != nil {
		t.Fatalf("update Shim %s: %v", name, err)
	}
}

// nodeAt names a node that has the Shim at hash ("" for none).
func nodeAt(t *testing.T, c *testutil.Cluster, shim, hash string) string {
	t.Helper()
	nodes := &corev1.NodeList{}
	if err := c.Client.List(context.Background(), nodes); err != nil {
		t.Fatal(err)
	}
	for i := range nodes.Items {
		if ok, h := nodelabel.State(&nodes.Items[i], shim); ok && h == hash && hash != "" {
			return nodes.Items[i].Name
		}
	}
	return ""
}

// nodeFiles reads what the shim's install consists of on a node: the
// bundle and containerd's configuration.
func nodeFiles(t *testing.T, n *testutil.Node, shim string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for _, dir := range []string{"/opt/shimkit/" + shim, "/etc/containerd"} {
		err := filepath.WalkDir(n.Local(dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			if d.Type()&fs.ModeSymlink != 0 { // the bundle's current version
				target, err := os.Readlink(p)
				files[strings.TrimPrefix(p, n.Root)] = []byte("-> " + target)
				return err
			}
			data, err := os.ReadFile(p)
			files[strings.TrimPrefix(p, n.Root)] = data
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return files
}

func assertSameFiles(t *testing.T, node string, want, got map[string][]byte) {
	t.Helper()
	for p, w := range want {
		if g, ok := got[p]; !ok || !bytes.Equal(g, w) {
			t.Errorf("%s: %s differs (%d bytes, was %d)", node, p, len(g), len(w))
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s: %s is new", node, p)
		}
	}
}

// runPodOn runs a pause pod of the RuntimeClass on the node and returns
// its container's ID.
func runPodOn(t *testing.T, c *testutil.Cluster, name, node, class string) string {
	t.Helper()
	p := workloadPod(name, node, class)
	if err := c.Client.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	return c.WaitPodRunning(t, "default", name).Status.ContainerStatuses[0].ContainerID
}

// workloadPod is a host-network pause pod of the RuntimeClass, bound to
// the node ("": scheduled).
func workloadPod(name, node, class string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			RuntimeClassName:              ptr.To(class),
			HostNetwork:                   true,
			TerminationGracePeriodSeconds: ptr.To(int64(1)),
			Containers:                    []corev1.Container{{Name: "pause", Image: testutil.PauseImageRef, ImagePullPolicy: corev1.PullNever}},
		},
	}
}

// planExitCodes: plan --exit-code is 0 for a file of the live spec (a
// no-op apply) and 1 for one that changes it.
func planExitCodes(t *testing.T, c *testutil.Cluster, name string) {
	t.Helper()
	live := &v1alpha1.Shim{}
	if err := c.Client.Get(context.Background(), client.ObjectKey{Name: name}, live); err != nil {
		t.Fatal(err)
	}
	same := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: live.Spec}
	if code, out, _ := shimkit(t, c, "plan", "-f", shimFile(t, same), "--exit-code"); code != 0 {
		t.Errorf("plan --exit-code of the live spec: exit %d, want 0\n%s", code, out)
	}
	changed := same.DeepCopy()
	changed.Spec.Canary = &v1alpha1.Canary{Timeout: &metav1.Duration{Duration: 45 * time.Second}}
	if code, out, _ := shimkit(t, c, "plan", "-f", shimFile(t, changed), "--exit-code"); code != plugin.ExitChanges || !strings.Contains(out, "canary.timeout") {
		t.Errorf("plan --exit-code of a changed canary: exit %d, want %d naming canary.timeout", code, plugin.ExitChanges)
	}
}

// planBakeHolds: once v3's first step is on its node and bakes, the live
// Shim's plan names the other two nodes for the next wave, at the bake's
// end; the operator then starts those two nodes, and not before then.
func planBakeHolds(t *testing.T, c *testutil.Cluster, nodes []testutil.ClusterNode, hash string) {
	t.Helper()
	waitFor(t, 120*time.Second, "v3's first step to bake", func() bool {
		s := getShimStatus(t, c, "gated")
		return conditionReason(s, v1alpha1.ConditionReconciling) == v1alpha1.ReasonBaking
	})
	var p report.PlanReport
	kubectlShimkit(t, c, &p, "plan", "gated")
	first := nodeAt(t, c, "gated", hash)
	var rest []string
	for _, n := range nodes {
		if n.Name != first {
			rest = append(rest, n.Name)
		}
	}
	slices.Sort(rest)
	if len(p.Waves) != 1 || !slices.Equal(slices.Sorted(slices.Values(p.Waves[0].Targets())), rest) || p.Waves[0].Step == nil || *p.Waves[0].Step != 2 {
		t.Fatalf("plan while baking: %+v, want one wave of %v at step 2", p.Waves, rest)
	}
	bakeEnd := p.Waves[0].At
	t.Logf("baking on %s; the plan: %v at %s", first, rest, bakeEnd.Format(time.RFC3339))
	kubectl(t, c, "wait", "--for=condition=Ready", "shim/gated", "--timeout=180s")
	jobs := &batchv1.JobList{}
	if err := c.Client.List(context.Background(), jobs, client.InNamespace("shimkit-system"), client.MatchingLabels{jobview.LabelShim: "gated", jobview.LabelSpecHash: hash}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, j := range jobs.Items {
		at, err := time.Parse(time.RFC3339Nano, j.Annotations[jobview.AnnotationCreated])
		if n := jobview.NodeOf(&j); n != first {
			got = append(got, n)
			if err != nil || at.Before(bakeEnd) {
				t.Errorf("Job %s on %s created at %s, before the bake's end %s (%v)", j.Name, n, at, bakeEnd, err)
			}
		}
	}
	if slices.Sort(got); !slices.Equal(got, rest) {
		t.Errorf("after the bake the operator started %v, the plan said %v", got, rest)
	}
}
