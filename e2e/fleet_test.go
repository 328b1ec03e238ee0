package e2e

import (
	"bytes"
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/nodejob"
	"github.com/shimkit/shimkit/internal/operator/results"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// The mixed fleet's Shim, its nodes' pool and the label of the nodes
// whose image has it.
const (
	mixShim    = "mix"
	mixPool    = "mix"
	bakedLabel = "shimkit.test/baked"
)

// fleetNode is one kind of node of the mixed fleet: how it joins, and the
// node files shimkit may change there (read before and after).
type fleetNode struct {
	kind  string
	join  testutil.JoinOptions
	files []string
	node  testutil.ClusterNode
	orig  map[string][]byte // files' contents at join (nil: absent)
}

// testFleet: one Shim across every kind of node a real fleet has, each
// joined for this scenario:
//   - containerd 2.2 whose config imports conf.d: the handler goes to a
//     drop-in, the root config untouched;
//   - containerd 1.7 with a version 2 config file, edited in place;
//   - a k3s-style node (containerd and the kubelet in k3s-agent.service),
//     current k3s, whose rendered config imports config-v3.toml.d: the
//     handler goes to a drop-in there (the directory created, and removed
//     again at the end); the installer's one restart takes its own kubelet
//     along, and its Job still reports; a second Shim installed and
//     deleted there restarts its kubelet twice, and a pod of mix runs on;
//   - a node whose image had the handler baked in by examples/image-builder
//     before it booted (spec.preinstalledOn): labelled from what its
//     kubelet reports, without an installer run or a restart;
//   - a node with read-only /etc and /opt: skipped, ReadOnlyHost;
//
// then the 2.2 node is reimaged in place (same name, fresh root, new
// machine-id): it loses its label at once and gets the shim again; the
// 1.7 node reboots with its config written anew: verified at once, found
// without the handler and installed again; and
// deleting the Shim leaves every node's files as they were.
func testFleet(t *testing.T, c *testutil.Cluster, dump *dumper, images []string) {
	ctx := context.Background()
	matrix := testutil.ContainerdMatrix(t)
	b17, b22 := matrix[1], matrix[2]
	pool := map[string]string{poolLabel: mixPool}
	rootConfig := "/etc/containerd/config.toml"
	dropIn := "/etc/containerd/conf.d/shimkit-" + mixShim + ".toml"
	k3sTemplate := testutil.K3sConfigDir + "/config-v3.toml.tmpl"
	k3sRendered := testutil.K3sConfigDir + "/config.toml"
	k3sDropIns := testutil.K3sConfigDir + "/config-v3.toml.d"
	k3sDropIn := k3sDropIns + "/shimkit-" + mixShim + ".toml"
	nodes := []*fleetNode{
		{kind: "containerd 2.2, drop-in", files: []string{rootConfig, dropIn},
			join: testutil.JoinOptions{Labels: pool, Containerd: &b22, Files: map[string][]byte{rootConfig: importsConfD(b22)}}},
		{kind: "containerd 1.7, file", files: []string{rootConfig},
			join: testutil.JoinOptions{Labels: pool, Containerd: &b17, OwnBootID: true}}, // rebooted
		{kind: "k3s-style", files: []string{k3sTemplate, k3sRendered, k3sDropIn},
			join: testutil.JoinOptions{Labels: pool, K3s: true}},
		{kind: "handler baked in", files: []string{rootConfig},
			join: testutil.JoinOptions{Labels: map[string]string{poolLabel: mixPool, bakedLabel: "true"}, Files: map[string][]byte{rootConfig: bakedConfig(t, b22)}}},
		{kind: "read-only /etc and /opt", files: []string{rootConfig},
			join: testutil.JoinOptions{Labels: pool, ReadOnly: []string{"/etc", "/opt"}}},
	}
	drop, file, k3s, baked, ro := nodes[0], nodes[1], nodes[2], nodes[3], nodes[4]
	start := time.Now()
	var joins []testutil.JoinOptions
	for _, fn := range nodes {
		fn.join.Images = images
		joins = append(joins, fn.join)
	}
	for i, n := range c.AddNodes(t, joins...) {
		nodes[i].node, nodes[i].orig = n, readFiles(n, nodes[i].files)
	}
	t.Logf("five nodes joined in %v", time.Since(start).Round(time.Second))
	dump.onFailure(t) // while the joined nodes are there
	starts := map[string]int{}
	for _, fn := range nodes {
		starts[fn.node.Name] = fn.node.ContainerdStarts(t)
	}
	k3sKubelet := pidOf(t, k3s.node, "kubelet")
	// A pod on the k3s-style node's pod network, before the install: it
	// runs on through the restart of its containerd and kubelet.
	bystander := workloadPod("bystander", k3s.node.Name, "")
	bystander.Spec.RuntimeClassName, bystander.Spec.HostNetwork = nil, false
	if err := c.Client.Create(ctx, bystander); err != nil {
		t.Fatal(err)
	}
	before := c.WaitPodRunning(t, "default", bystander.Name)
	if before.Status.PodIP == k3s.node.IP {
		t.Errorf("the pod on %s is on the host's network (%s)", k3s.node.Name, before.Status.PodIP)
	}

	srv := c.StartFileServer(t)
	wrapper := "#!/bin/sh\nexec /usr/local/bin/containerd-shim-runc-v2 \"$@\"\n" // the node's own runc shim, whatever its containerd
	a := testutil.NewArchive(t, testutil.ArchiveFile{Name: "containerd-shim-" + mixShim + "-v2", Mode: 0o755, Data: []byte(wrapper)})
	shim := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: mixShim}, Spec: v1alpha1.ShimSpec{
		NodeSelector:    pool,
		PreinstalledOn:  map[string]string{bakedLabel: "true"},
		FetchStrategy:   v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{Location: srv.Add("/mix.tar.gz", a.Data), SHA256: a.SHA256}},
		RuntimeClass:    v1alpha1.RuntimeClassSpec{Name: mixShim, Handler: mixShim},
		RolloutStrategy: &v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutRolling, Rolling: &v1alpha1.RollingUpdate{MaxUpdate: ptr.To(intstr.FromString("100%"))}},
	}}
	start = time.Now()
	if err := c.Client.Create(ctx, shim); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 180*time.Second, "mix on four nodes, skipped on the read-only one", func() bool {
		s := &v1alpha1.Shim{}
		return c.Client.Get(ctx, client.ObjectKeyFromObject(shim), s) == nil &&
			s.Status.UpdatedNodes == 4 && s.Status.SkippedNodes == 1
	})
	t.Logf("mix installed on three nodes and labelled on the baked one in %v", time.Since(start).Round(time.Second))
	s := &v1alpha1.Shim{}
	if err := c.Client.Get(ctx, client.ObjectKeyFromObject(shim), s); err != nil {
		t.Fatal(err)
	}
	if len(s.Status.Skipped) != 1 || s.Status.Skipped[0].Reason != v1alpha1.SkipReadOnlyHost || !slices.Equal(s.Status.Skipped[0].Nodes, []string{ro.node.Name}) {
		t.Errorf("skipped: %+v, want %s for ReadOnlyHost", s.Status.Skipped, ro.node.Name)
	}
	for _, fn := range nodes {
		assertLabelled(t, c, fn.node.Name, mixShim, fn != ro)
		want := starts[fn.node.Name]
		if fn == drop || fn == file || fn == k3s {
			want++
		}
		if got := fn.node.ContainerdStarts(t); got != want {
			t.Errorf("%s (%s): containerd started %d times since it joined, want %d", fn.node.Name, fn.kind, got-starts[fn.node.Name], want-starts[fn.node.Name])
		}
	}
	// An installer ran on every node but the baked one (on the read-only
	// one, to find it read-only before changing anything).
	want := []string{drop.node.Name, file.node.Name, k3s.node.Name, ro.node.Name}
	slices.Sort(want)
	if jobs := installJobs(t, c, mixShim); !slices.Equal(jobs, want) {
		t.Errorf("install Jobs ran on %v, want every node but the baked one %s", jobs, baked.node.Name)
	}
	// What went where: the 2.2 node's root config is untouched (a drop-in
	// of its own), the 1.7 node's file has the handler, the k3s-style
	// node has it in a drop-in its rendered config imports (no template,
	// the rendered config as it was), and the baked and read-only nodes
	// are as they were.
	assertFile(t, drop, rootConfig, drop.orig[rootConfig])
	assertHas(t, drop, dropIn, mixShim)
	assertHas(t, file, rootConfig, mixShim)
	assertHas(t, k3s, k3sDropIn, mixShim)
	assertFile(t, k3s, k3sTemplate, nil)
	assertFile(t, k3s, k3sRendered, k3s.orig[k3sRendered])
	assertFile(t, baked, rootConfig, baked.orig[rootConfig])
	assertFile(t, ro, rootConfig, ro.orig[rootConfig])
	// The k3s-style node's kubelet was restarted with its containerd, and
	// its Job reported all the same (the node is labelled: its result was
	// read).
	if now := pidOf(t, k3s.node, "kubelet"); now == k3sKubelet {
		t.Errorf("the k3s-style node's kubelet (pid %s) was not restarted", now)
	}
	// Its install Job ended in one pod (the restart of k3s-agent took the
	// kubelet along, not the Job's pod: no second run), and the operator
	// labelled the node from the result that pod's installer wrote as its
	// termination message: installed, containerd restarted.
	k3sInstall := oneJobOn(t, c, mixShim, jobview.OpInstall, k3s.node.Name)
	pods, err := results.Pods(ctx, c.Client, k3sInstall)
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 1 {
		t.Errorf("the install Job %s on %s had %d pods, want 1", k3sInstall.Name, k3s.node.Name, len(pods))
	}
	switch res := nodejob.ResultOf(pods, mixShim); {
	case res == nil:
		t.Errorf("the install Job %s on %s: no result in its pods' termination messages", k3sInstall.Name, k3s.node.Name)
	case res.Operation != plan.OpInstall || res.Outcome != plan.Succeeded || !res.Changed || !res.Restarted:
		t.Errorf("the install Job %s on %s reported %+v; want install Succeeded, changed and restarted", k3sInstall.Name, k3s.node.Name, res)
	default:
		t.Logf("%s (k3s-style): installed in one run, containerd restarted in %v", k3s.node.Name, res.RestartDuration)
	}
	after := c.WaitPodRunning(t, "default", bystander.Name)
	if was, is := before.Status.ContainerStatuses[0], after.Status.ContainerStatuses[0]; is.ContainerID != was.ContainerID || is.RestartCount != 0 {
		t.Errorf("the pod on %s did not run on through the restart: %+v, was %+v", k3s.node.Name, is, was)
	}
	// Pods of the RuntimeClass run on the node that got it installed
	// through a kubelet restart and on the one whose image had it.
	for _, fn := range []*fleetNode{k3s, baked} {
		runPodOn(t, c, "mix-"+fn.node.Name, fn.node.Name, mixShim)
	}
	anotherShimOnK3s(t, c, shim.Spec.FetchStrategy, k3s)

	// Reimaged in place: a fresh root and machine-id under the same name.
	// The label goes as soon as its kubelet reports the new machine, and
	// the node is installed again.
	start = time.Now()
	drop.node = c.Reimage(t, drop.node)
	back := time.Since(start)
	labelled := func() bool {
		n := &corev1.Node{}
		if err := c.Client.Get(ctx, client.ObjectKey{Name: drop.node.Name}, n); err != nil {
			t.Fatal(err)
		}
		ok, _ := nodelabel.State(n, mixShim)
		return ok
	}
	// Within seconds (0.8–1.1 s measured on an idle machine).
	waitFor(t, 15*time.Second, "the reimaged node to lose its label", func() bool { return !labelled() })
	t.Logf("%s reimaged: Ready again in %v, unlabelled %v after", drop.node.Name, back.Round(time.Second), (time.Since(start) - back).Round(100*time.Millisecond))
	waitFor(t, 120*time.Second, "the reimaged node to get mix again", labelled)
	t.Logf("%s installed again %v after the reimage", drop.node.Name, time.Since(start).Round(time.Second))
	assertHas(t, drop, dropIn, mixShim)
	rebootForgetful(t, c, shim, file, rootConfig)

	// Delete: every node's files as they were.
	for _, name := range []string{bystander.Name, "mix-" + k3s.node.Name, "mix-" + baked.node.Name} {
		if err := c.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}); err != nil {
			t.Error(err)
		}
	}
	// The uninstall Jobs are the Shim's: the garbage collector takes them
	// once it is gone, so they are watched from before the deletion, each
	// one's last state kept.
	uninstalls := watchJobs(t, c, mixShim, jobview.OpUninstall, k3s.node.Name)
	start = time.Now()
	if err := c.Client.Delete(ctx, shim); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 180*time.Second, "mix gone", func() bool {
		return apierrors.IsNotFound(c.Client.Get(ctx, client.ObjectKeyFromObject(shim), &v1alpha1.Shim{}))
	})
	t.Logf("mix deleted from the fleet in %v", time.Since(start).Round(time.Second))
	// The k3s-style node uninstalls in one run: one Job, succeeded with
	// one pod, through the restart of k3s-agent and its kubelet.
	waitFor(t, 30*time.Second, "the k3s-style node's uninstall Job seen finished", func() bool {
		return slices.ContainsFunc(uninstalls(), func(j batchv1.Job) bool { return jobFinished(&j) })
	})
	if jobs := uninstalls(); len(jobs) != 1 {
		t.Errorf("%s (k3s-style): %d uninstall Jobs, want 1: %v", k3s.node.Name, len(jobs), namesOf(jobs))
	} else if st := jobs[0].Status; st.Succeeded != 1 || st.Failed != 0 {
		t.Errorf("%s (k3s-style): uninstall Job %s ended with %d succeeded and %d failed pods, want 1 and 0", k3s.node.Name, jobs[0].Name, st.Succeeded, st.Failed)
	}
	for _, fn := range nodes {
		for _, p := range fn.files {
			assertFile(t, fn, p, fn.orig[p])
		}
		if _, err := os.Stat(fn.node.Local("/opt/shimkit")); !os.IsNotExist(err) {
			t.Errorf("%s (%s): /opt/shimkit left: %v", fn.node.Name, fn.kind, err)
		}
		assertLabelled(t, c, fn.node.Name, mixShim, false)
	}
	if _, err := os.Stat(k3s.node.Local(k3sDropIns)); !os.IsNotExist(err) {
		t.Errorf("%s (%s): the drop-in directory shimkit created is left: %v", k3s.node.Name, k3s.kind, err)
	}
}

// anotherShimOnK3s installs, then deletes, a second Shim on the k3s-style
// node while a pod of mix runs there: each of its installer runs restarts
// k3s-agent and so the kubelet, which admits its running pods again
// against the node's labels as they are then. mix's label was never
// touched, so the pod runs on: the same container, never restarted.
func anotherShimOnK3s(t *testing.T, c *testutil.Cluster, fetch v1alpha1.FetchStrategy, k3s *fleetNode) {
	t.Helper()
	ctx := context.Background()
	pod := "mix-" + k3s.node.Name
	was := c.WaitPodRunning(t, "default", pod).Status.ContainerStatuses[0]
	other := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "mix-other"}, Spec: v1alpha1.ShimSpec{
		NodeSelector:  onNode(k3s.node),
		FetchStrategy: fetch,
		RuntimeClass:  v1alpha1.RuntimeClassSpec{Name: "mix-other", Handler: "mix-other"},
	}}
	for _, step := range []string{"install", "uninstall"} {
		kubelet := pidOf(t, k3s.node, "kubelet")
		start := time.Now()
		if step == "install" {
			if err := c.Client.Create(ctx, other); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 120*time.Second, "mix-other on "+k3s.node.Name, func() bool {
				s := &v1alpha1.Shim{}
				return c.Client.Get(ctx, client.ObjectKeyFromObject(other), s) == nil && s.Status.UpdatedNodes == 1
			})
		} else {
			if err := c.Client.Delete(ctx, other); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 120*time.Second, "mix-other gone", func() bool {
				return apierrors.IsNotFound(c.Client.Get(ctx, client.ObjectKeyFromObject(other), &v1alpha1.Shim{}))
			})
		}
		if now := pidOf(t, k3s.node, "kubelet"); now == kubelet {
			t.Errorf("%s: the %s of mix-other did not restart the kubelet (pid %s)", k3s.node.Name, step, now)
		}
		is := c.WaitPodRunning(t, "default", pod).Status.ContainerStatuses[0]
		if is.ContainerID != was.ContainerID || is.RestartCount != 0 {
			t.Errorf("%s: mix's pod did not run on through the %s of mix-other and its kubelet's restart: %+v, was %+v", k3s.node.Name, step, is, was)
		}
		t.Logf("%s (k3s-style): mix-other's %s restarted k3s-agent and its kubelet in %v; mix's pod ran on", k3s.node.Name, step, time.Since(start).Round(100*time.Millisecond))
	}
}

// rebootForgetful reboots the containerd 1.7 node with its config
// written anew, as an image or config management writes it at boot:
// its kubelet reports no runtime handlers, so only the new boot ID tells
// the operator, which verifies the node at once, finds the handler gone
// and installs it again; a pod of the RuntimeClass then runs there.
func rebootForgetful(t *testing.T, c *testutil.Cluster, shim *v1alpha1.Shim, fn *fleetNode, cfg string) {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	c.Reboot(t, fn.node, map[string][]byte{cfg: fn.orig[cfg]})
	boot, up := testutil.BootID(t, fn.node.Node), time.Since(start)
	var caught time.Duration
	waitFor(t, 180*time.Second, fn.node.Name+" verified after its reboot and installed again", func() bool {
		n := &corev1.Node{}
		if err := c.Client.Get(ctx, client.ObjectKey{Name: fn.node.Name}, n); err != nil {
			t.Fatal(err)
		}
		v := nodelabel.VerificationOf(n, mixShim, shim.UID)
		if v == nil || v.Boot != boot {
			return false
		}
		if caught == 0 && v.Job != "" && len(v.Drift) > 0 {
			caught = time.Since(start)
			t.Logf("%s: the verification after its reboot found %q", fn.node.Name, v.Drift)
		}
		installed, _ := nodelabel.State(n, mixShim)
		return installed && v.Job == "" && len(v.Drift) == 0
	})
	// (The record of the verification may be replaced by the install's
	// between two looks: then its Job tells.)
	if caught == 0 && !slices.ContainsFunc(jobsOn(t, c, mixShim, jobview.OpVerify, fn.node.Name), func(j batchv1.Job) bool {
		return !j.CreationTimestamp.Time.Before(start.Truncate(time.Second))
	}) {
		t.Errorf("%s: installed again after its reboot without a verifying Job", fn.node.Name)
	}
	t.Logf("%s (containerd 1.7) rebooted with its config written anew: Ready in %v, caught %v, installed again %v after the reboot",
		fn.node.Name, up.Round(100*time.Millisecond), caught.Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond))
	assertHas(t, fn, cfg, mixShim)
	runPodOn(t, c, "mix-"+fn.node.Name, fn.node.Name, mixShim)
	if err := c.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "mix-" + fn.node.Name}}); err != nil {
		t.Error(err)
	}
}

// importsConfD is the build's cluster config importing conf.d, as
// containerd 2.2's default config does.
func importsConfD(b testutil.ContainerdBuild) []byte {
	version, rest, _ := strings.Cut(string(testutil.ClusterContainerdConfig(b)), "\n")
	return []byte(version + "\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n" + rest)
}

// bakedConfig is a containerd 2.2 node's config with the mix handler
// (the node's runc shim) registered by examples/image-builder, run on the
// image's root before it boots.
func bakedConfig(t *testing.T, b testutil.ContainerdBuild) []byte {
	t.Helper()
	root := t.TempDir()
	cfg := filepath.Join(root, "etc/containerd/config.toml")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, testutil.ClusterContainerdConfig(b), 0o644); err != nil {
		t.Fatal(err)
	}
	builder := testutil.GoBuild(t, "./examples/image-builder", filepath.Join(t.TempDir(), "image-builder"))
	if out, err := exec.Command(builder, "-root", root, "-name", mixShim, "-runtime-type", "io.containerd.runc.v2").CombinedOutput(); err != nil {
		t.Fatalf("image-builder: %v\n%s", err, out)
	}
	data, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// readFiles reads node files (nil for an absent one).
func readFiles(n testutil.ClusterNode, paths []string) map[string][]byte {
	out := map[string][]byte{}
	for _, p := range paths {
		out[p], _ = os.ReadFile(n.Local(p))
	}
	return out
}

// assertFile fails unless the node file holds want (nil: is absent).
func assertFile(t *testing.T, fn *fleetNode, p string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(fn.node.Local(p))
	switch {
	case want == nil && !os.IsNotExist(err):
		t.Errorf("%s (%s): %s is there (%v):\n%s", fn.node.Name, fn.kind, p, err, got)
	case want != nil && !bytes.Equal(got, want):
		t.Errorf("%s (%s): %s is\n%s\nwant\n%s", fn.node.Name, fn.kind, p, got, want)
	}
}

// assertHas fails unless the node file mentions s.
func assertHas(t *testing.T, fn *fleetNode, p, s string) {
	t.Helper()
	if got, err := os.ReadFile(fn.node.Local(p)); err != nil || !bytes.Contains(got, []byte(s)) {
		t.Errorf("%s (%s): %s lacks %s (%v):\n%s", fn.node.Name, fn.kind, p, s, err, got)
	}
}

// pidOf is the pid of the node's process named name, waiting for one
// (the k3s-style agent starts its kubelet again a second after it exits:
// a kubelet that exited while containerd restarted is not there at once).
func pidOf(t *testing.T, n testutil.ClusterNode, name string) string {
	t.Helper()
	var pid string
	waitFor(t, 30*time.Second, name+" running on "+n.Name, func() bool {
		out, err := n.Exec(context.Background(), "pidof", name)
		pid = strings.TrimSpace(string(out))
		return err == nil && pid != ""
	})
	return pid
}

// installJobs are the nodes the Shim's install Jobs ran on, sorted.
func installJobs(t *testing.T, c *testutil.Cluster, shim string) []string {
	t.Helper()
	jobs := &batchv1.JobList{}
	if err := c.Client.List(context.Background(), jobs, client.InNamespace("shimkit-system"), client.MatchingLabels{jobview.LabelOp: "install"}); err != nil {
		t.Fatal(err)
	}
	var nodes []string
	for _, j := range jobs.Items {
		if j.Labels[jobview.LabelShim] == shim && !slices.Contains(nodes, j.Spec.Template.Spec.NodeName) {
			nodes = append(nodes, j.Spec.Template.Spec.NodeName)
		}
	}
	slices.Sort(nodes)
	return nodes
}

// oneJobOn is the Shim's only Job of op on the node, once it finished:
// it fails the test unless there is exactly one, and unless it ended
// with one pod succeeded and none failed.
func oneJobOn(t *testing.T, c *testutil.Cluster, shim, op, node string) *batchv1.Job {
	t.Helper()
	var jobs []batchv1.Job
	waitFor(t, 60*time.Second, op+" Job on "+node+" finished", func() bool {
		jobs = jobsOn(t, c, shim, op, node)
		return len(jobs) > 0 && !slices.ContainsFunc(jobs, func(j batchv1.Job) bool { return !jobFinished(&j) })
	})
	if len(jobs) != 1 {
		t.Fatalf("%s: %d %s Jobs of %s, want 1: %v", node, len(jobs), op, shim, namesOf(jobs))
	}
	if st := jobs[0].Status; st.Succeeded != 1 || st.Failed != 0 {
		t.Errorf("%s: %s Job %s ended with %d succeeded and %d failed pods, want 1 and 0", node, op, jobs[0].Name, st.Succeeded, st.Failed)
	}
	return &jobs[0]
}

// jobsOn are the Shim's Jobs of op (jobview.OpInstall, OpUninstall) on
// the node.
func jobsOn(t *testing.T, c *testutil.Cluster, shim, op, node string) []batchv1.Job {
	t.Helper()
	list := &batchv1.JobList{}
	if err := c.Client.List(context.Background(), list, client.InNamespace("shimkit-system"), client.MatchingLabels{jobview.LabelOp: op}); err != nil {
		t.Fatal(err)
	}
	var jobs []batchv1.Job
	for _, j := range list.Items {
		if j.Labels[jobview.LabelShim] == shim && j.Spec.Template.Spec.NodeName == node {
			jobs = append(jobs, j)
		}
	}
	return jobs
}

// watchJobs watches the Shim's Jobs of op on the node from now until the
// test ends; the function it returns gives the last state seen of each,
// in name order, deleted ones included (a Job's deletion event carries
// its last state).
func watchJobs(t *testing.T, c *testutil.Cluster, shim, op, node string) func() []batchv1.Job {
	t.Helper()
	wc, err := client.NewWithWatch(c.Config, client.Options{Scheme: c.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(context.Background(), &batchv1.JobList{}, client.InNamespace("shimkit-system"), client.MatchingLabels{jobview.LabelOp: op})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	var mu sync.Mutex
	seen := map[string]batchv1.Job{}
	go func() {
		for ev := range w.ResultChan() {
			j, ok := ev.Object.(*batchv1.Job)
			if !ok || j.Labels[jobview.LabelShim] != shim || j.Spec.Template.Spec.NodeName != node {
				continue
			}
			mu.Lock()
			seen[j.Name] = *j
			mu.Unlock()
		}
	}()
	return func() []batchv1.Job {
		mu.Lock()
		defer mu.Unlock()
		var jobs []batchv1.Job
		for _, name := range slices.Sorted(maps.Keys(seen)) {
			jobs = append(jobs, seen[name])
		}
		return jobs
	}
}

// jobFinished reports whether the Job completed or failed for good.
func jobFinished(j *batchv1.Job) bool {
	return slices.ContainsFunc(j.Status.Conditions, func(c batchv1.JobCondition) bool {
		return (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue
	})
}

func namesOf(jobs []batchv1.Job) []string {
	names := make([]string, len(jobs))
	for i, j := range jobs {
		names[i] = j.Name
	}
	return names
}
