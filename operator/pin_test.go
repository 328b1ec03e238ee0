package operator_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/fetch"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// fleet is a few stand-in nodes, each a root filesystem the real
// installer (offline: no containerd runs there) installs into. It
// records, per node, every digest the installers reported.
type fleet struct {
	dir string

	mu       sync.Mutex
	reported map[string][]string // node → digests reported, in order
	running  int
	maxRun   int
	// afterFirst runs once, after the first install finished.
	afterFirst func()
	once       sync.Once
}

func startFleet(t *testing.T, env *testutil.Env, nodes int) *fleet {
	t.Helper()
	return startFleetRunning(t, env, nodes, func(f *fleet) func(context.Context, *batchv1.Job) testutil.PodRun {
		return testutil.RealInstaller(t, func(j *batchv1.Job) string { return f.root(j.Spec.Template.Spec.NodeName) }, "--offline")
	})
}

// startFleetRunning is startFleet with each Job's pod run by what
// runner returns for the fleet (startFleet: the real installer).
func startFleetRunning(t *testing.T, env *testutil.Env, nodes int, runner func(*fleet) func(context.Context, *batchv1.Job) testutil.PodRun) *fleet {
	t.Helper()
	f := &fleet{dir: t.TempDir(), reported: map[string][]string{}}
	createNodes(t, env.Client, nodes, map[string]string{"pin": "true"}, "pin")
	for i := range nodes {
		f.prepare(t, nodeName(i))
	}
	run := runner(f)
	startPodKubelet(t, env, 100*time.Millisecond, func(ctx context.Context, j *batchv1.Job) testutil.PodRun {
		node := j.Spec.Template.Spec.NodeName
		f.mu.Lock()
		f.running++
		f.maxRun = max(f.maxRun, f.running)
		f.mu.Unlock()
		out := run(ctx, j)
		f.mu.Lock()
		f.running--
		rs, _ := plan.DecodeResults([]byte(out.Message))
		for _, res := range rs {
			if res.Digest != "" {
				f.reported[node] = append(f.reported[node], res.Digest)
			}
		}
		f.mu.Unlock()
		if f.afterFirst != nil {
			f.once.Do(f.afterFirst)
		}
		return out
	})
	return f
}

func nodeName(i int) string { return "pin-" + []string{"0000", "0001", "0002", "0003"}[i] }

func (f *fleet) root(node string) string { return filepath.Join(f.dir, node) }

// prepare gives a node of the fleet its root with a containerd config.
func (f *fleet) prepare(t *testing.T, node string) {
	t.Helper()
	cfg := filepath.Join(f.root(node), "etc/containerd/config.toml")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("version = 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// last returns each node's last reported digest.
func (f *fleet) last() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	for n, ds := range f.reported {
		out[n] = ds[len(ds)-1]
	}
	return out
}

// pinShim is a Shim of the fleet's nodes with maxUpdate 1.
func pinShim(name string, fs v1alpha1.FetchStrategy) *v1alpha1.Shim {
	one := intstr.FromInt32(1)
	return &v1alpha1.Shim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ShimSpec{
			NodeSelector: map[string]string{"pin": "true"}, FetchStrategy: fs,
			RuntimeClass:    v1alpha1.RuntimeClassSpec{Name: name},
			RolloutStrategy: &v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutRolling, Rolling: &v1alpha1.RollingUpdate{MaxUpdate: &one}},
		},
	}
}

// readyAt waits until the Shim is Ready with its artifact pinned to want
// and every node labelled at the status's spec hash.
func readyAt(t *testing.T, c client.Client, name, want string) *v1alpha1.Shim {
	t.Helper()
	var s *v1alpha1.Shim
	waitFor(t, 90*time.Second, "Ready at "+want, func() (bool, string) {
		s = getShim(t, c, name)
		if ok, msg := ready(c, name)(); !ok {
			return false, msg
		}
		if s.Status.Artifact == nil || want != "" && s.Status.Artifact.Digest != want {
			return false, "artifact " + digestOf(s)
		}
		for n, h := range nodesWith(t, c, name) {
			if h != s.Status.SpecHash {
				return false, "node " + n + " at " + h
			}
		}
		return true, ""
	})
	return s
}

func digestOf(s *v1alpha1.Shim) string {
	if s.Status.Artifact == nil {
		return "none"
	}
	return s.Status.Artifact.Digest
}

func annotateResolve(t *testing.T, c client.Client, name, value string) {
	t.Helper()
	s := getShim(t, c, name)
	patch := client.MergeFrom(s.DeepCopy())
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[v1alpha1.ResolveAnnotation] = value
	if err := c.Patch(context.Background(), s, patch); err != nil {
		t.Fatal(err)
	}
}

// assertAll checks that every node of the fleet last reported want.
func (f *fleet) assertAll(t *testing.T, nodes int, want string) {
	t.Helper()
	last := f.last()
	if len(last) != nodes {
		t.Errorf("%d nodes reported a digest, want %d: %v", len(last), nodes, last)
	}
	for n, d := range last {
		if d != want {
			t.Errorf("node %s installed %s, want %s (all: %v)", n, d, want, last)
		}
	}
}

// TestMovedTagStaysPinned: a tag moved while the first node installs does
// not split the fleet: every node installs the digest the operator
// resolved first. The move is picked up only when the resolve annotation
// changes, and then rolls out as an upgrade, one node at a time.
func TestMovedTagStaysPinned(t *testing.T) {
	env := startCluster(t)
	reg := testutil.StartRegistry(t, "", "")
	v1 := testutil.NewShimArchive(t, "pin", "/bin/true", map[string]string{"VERSION": "1"})
	v2 := testutil.NewShimArchive(t, "pin", "/bin/true", map[string]string{"VERSION": "2"})
	push := func(a testutil.ShimArchive) digest.Digest {
		return reg.PushShim(t, "shims/pin", "stable", testutil.PlatformArtifact{MediaType: fetch.MediaTypeShimLayer, Data: a.Data}).Digest
	}
	d1 := push(v1)
	f := startFleet(t, env, 3)
	var d2 digest.Digest
	f.afterFirst = func() { d2 = push(v2) }
	startOperator(t, env)
	shim := pinShim("pin", v1alpha1.FetchStrategy{Type: v1alpha1.FetchOCI, OCI: &v1alpha1.OCIFetch{Reference: reg.Host + "/shims/pin:stable", PlainHTTP: true}})
	if err := env.Client.Create(context.Background(), shim); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range eventNotes(t, env.Client, "pin", "Normal") {
			t.Log("event:", n)
		}
		for _, n := range eventNotes(t, env.Client, "pin", "Warning") {
			t.Log("warning:", n)
		}
		t.Logf("digests d1 %s d2 %s reported %v", d1, d2, f.reported)
		t.Logf("nodes %v", nodesWith(t, env.Client, "pin"))
		for _, j := range jobsOf(t, env.Client, "pin") {
			t.Logf("job %s labels %v annotations %v status %+v", j.Name, j.Labels, j.Annotations, j.Status.Conditions)
		}
	})
	s := readyAt(t, env.Client, "pin", d1.String())
	f.assertAll(t, 3, d1.String())
	if d2 == "" || d2 == d1 {
		t.Fatalf("the tag did not move during the rollout (%s)", d2)
	}
	first := s.Status.SpecHash

	annotateResolve(t, env.Client, "pin", "1")
	s = readyAt(t, env.Client, "pin", d2.String())
	f.assertAll(t, 3, d2.String())
	if s.Status.SpecHash == first {
		t.Errorf("the new digest kept the spec hash %s", first)
	}
	if f.maxRun > 1 {
		t.Errorf("%d installers ran at once, maxUpdate is 1", f.maxRun)
	}
	for n, ds := range f.reported {
		if len(ds) != 2 {
			t.Errorf("node %s installed %v, want v1 then v2", n, ds)
		}
	}
	if s.Status.Artifact.ResolveRequest != "1" || s.Status.Artifact.Source != shim.Spec.FetchStrategy.OCI.Reference {
		t.Errorf("status.artifact = %+v", s.Status.Artifact)
	}
}

// TestChangedURLStaysPinned: an HTTP artifact without sha256 is pinned to
// the digest of what the URL served when the operator resolved it;
// content changed at the URL rolls out only on the annotation. A node
// handed the old digest after the change fails with DigestMismatch rather
// than installing something else.
func TestChangedURLStaysPinned(t *testing.T) {
	env := startCluster(t)
	srv := testutil.StartFileServer(t)
	v1 := testutil.NewShimArchive(t, "web", "/bin/true", map[string]string{"VERSION": "1"})
	v2 := testutil.NewShimArchive(t, "web", "/bin/true", map[string]string{"VERSION": "2"})
	url := srv.Add("/web.tar.gz", v1.Data)
	f := startFleet(t, env, 2)
	startOperator(t, env)
	shim := pinShim("web", v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{Location: url}})
	if err := env.Client.Create(context.Background(), shim); err != nil {
		t.Fatal(err)
	}
	d1 := "sha256:" + v1.SHA256
	readyAt(t, env.Client, "web", d1)
	f.assertAll(t, 2, d1)

	srv.Add("/web.tar.gz", v2.Data)
	annotateResolve(t, env.Client, "web", "after-change")
	d2 := "sha256:" + v2.SHA256
	readyAt(t, env.Client, "web", d2)
	f.assertAll(t, 2, d2)
}

// TestInstalledDigestMustMatch: a node whose installer reports another
// digest than the rollout pinned is not up to date: it fails with
// DigestMismatch and halts the rollout.
func TestInstalledDigestMustMatch(t *testing.T) {
	env := startCluster(t)
	createNodes(t, env.Client, 2, map[string]string{"pin": "true"}, "pin")
	other := "sha256:" + strings.Repeat("e", 64)
	startPodKubelet(t, env, 50*time.Millisecond, func(_ context.Context, j *batchv1.Job) testutil.PodRun {
		return testutil.ResultRun(t, 0, &plan.NodeResult{APIVersion: plan.APIVersion, Kind: plan.KindNodeResult, Operation: plan.OpInstall, Outcome: plan.Succeeded, Digest: other})
	})
	startOperator(t, env)
	sum := strings.Repeat("a", 64)
	if err := env.Client.Create(context.Background(), pinShim("mm", v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{
		Location: "https://artifacts.invalid/mm.tgz", SHA256: sum,
	}})); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "DigestMismatch", func() (bool, string) {
		s := getShim(t, env.Client, "mm")
		c := condition(s, v1alpha1.ConditionDegraded)
		if c == nil || c.Reason != v1alpha1.ReasonNodeFailed || len(s.Status.FailingNodes) == 0 {
			return false, "not degraded"
		}
		f := s.Status.FailingNodes[0]
		return f.Reason == string(plan.ReasonDigestMismatch) && strings.Contains(f.Message, sum), f.Reason + ": " + f.Message
	})
	if got := nodesWith(t, env.Client, "mm"); len(got) != 0 {
		t.Errorf("nodes labelled despite the wrong digest: %v", got)
	}
	if n := len(jobsOf(t, env.Client, "mm")); n != 1 {
		t.Errorf("%d Jobs, want 1 (the rollout halts after the first failure)", n)
	}
}

func digestOfString(s string) digest.Digest { return digest.Digest(s) }
