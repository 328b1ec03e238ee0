package testutil_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/mod/modfile"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"

	"github.com/shimkit/shimkit/internal/testutil"
)

// TestEnvtestHarness proves the envtest binaries built from the Go module
// proxy run: StartEnv's API server reports the oldest supported release,
// StartEnvOf's each release's, and it serves writes.
func TestEnvtestHarness(t *testing.T) {
	for _, rel := range testutil.KubeReleases() {
		t.Run(rel, func(t *testing.T) {
			start := func(t testing.TB) *testutil.Env { return testutil.StartEnvOf(t, rel, nil) }
			if rel == testutil.KubeOldest {
				start = func(t testing.TB) *testutil.Env { return testutil.StartEnv(t) }
			}
			checkEnv(t, start(t), rel)
		})
	}
}

// checkEnv checks that env's API server is the release's and serves
// writes.
func checkEnv(t *testing.T, env *testutil.Env, release string) {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	info, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := testutil.Version(release)
	if info.GitVersion != want {
		t.Errorf("kube-apiserver reports %q, want %q (%s)", info.GitVersion, want, release)
	}
	ctx := context.Background()
	for i := range 3 {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i)}}
		if err := env.Client.Create(ctx, node); err != nil {
			t.Fatal(err)
		}
	}
	var nodes corev1.NodeList
	if err := env.Client.List(ctx, &nodes); err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 3 {
		t.Errorf("listed %d nodes, want 3", len(nodes.Items))
	}
}

// TestEnvDiesWithTheTest SIGKILLs a test process (the helper
// TestHelperEnv) that runs envtest, as go test -timeout ends one: no
// t.Cleanup runs, and its kube-apiserver and etcd die with it.
func TestEnvDiesWithTheTest(t *testing.T) {
	testutil.RequireHarness(t)
	testutil.BinDir(t, "kube", testutil.KubeOldest, "kube-apiserver")
	testutil.BinDir(t, "etcd", "ETCD_VERSION", "etcd")
	// envtest's directories, which the killed helper cannot remove.
	helper, out, stderr := startHelper(t, "TestHelperEnv", "env", "TMPDIR="+t.TempDir())
	pids, err := readPIDs(out, 3*time.Minute, "kube-apiserver", "etcd")
	if err != nil {
		_ = helper.Process.Kill()
		_ = helper.Wait()
		t.Fatalf("%v; the helper's stderr:\n%s", err, stderr)
	}
	for name, pid := range pids {
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		if !running(pid) {
			t.Fatalf("the helper's %s %d is not running", name, pid)
		}
	}
	if err := helper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()
	for name, pid := range pids {
		if err := waitDead(pid, 10*time.Second); err != nil {
			t.Errorf("the helper's %s: %v", name, err)
		}
	}
}

// TestHelperEnv is the test process TestEnvDiesWithTheTest kills: it
// starts envtest, names the pids of its kube-apiserver and etcd (its
// children running those executables: the wrappers exec them in place)
// and waits to be killed.
func TestHelperEnv(t *testing.T) {
	if os.Getenv(helperEnv) != "env" {
		t.Skip("the helper process of TestEnvDiesWithTheTest")
	}
	testutil.StartEnv(t)
	children := childrenByExe(os.Getpid())
	for _, name := range []string{"kube-apiserver", "etcd"} {
		pid, ok := children[name]
		if !ok {
			t.Fatalf("no child of this process runs %s: %v", name, children)
		}
		fmt.Printf("%s %d\n", name, pid)
	}
	time.Sleep(10 * time.Minute)
}

// TestKubeBuildModulesPinTheReleases: the build modules of hack/tools
// build the Kubernetes releases hack/versions.env names, each staging
// module at that release's version.
func TestKubeBuildModulesPinTheReleases(t *testing.T) {
	for dir, release := range map[string]string{"kube": testutil.KubeNewest, "kube-oldest": testutil.KubeOldest} {
		v, err := testutil.Version(release)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(testutil.RepoRoot(), "hack", "tools", dir, "go.mod")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := modfile.Parse(path, data, nil)
		if err != nil {
			t.Fatal(err)
		}
		staging := "v0." + strings.TrimPrefix(v, "v1.")
		got := ""
		for _, r := range f.Require {
			if r.Mod.Path == "k8s.io/kubernetes" {
				got = r.Mod.Version
			}
		}
		if got != v {
			t.Errorf("%s requires k8s.io/kubernetes %q, want %s (%s)", path, got, v, release)
		}
		for _, r := range f.Replace {
			if strings.HasPrefix(r.Old.Path, "k8s.io/") && r.New.Version != staging {
				t.Errorf("%s replaces %s by %s, want %s", path, r.Old.Path, r.New.Version, staging)
			}
		}
	}
}
