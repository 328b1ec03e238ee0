package testutil_test

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"

	"github.com/shimkit/shimkit/internal/testutil"
)

// TestEnvtestHarness proves the envtest binaries built from the Go module
// proxy run: the API server reports the pinned version and serves writes.
func TestEnvtestHarness(t *testing.T) {
	env := testutil.StartEnv(t)
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	info, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := testutil.Version("KUBE_VERSION")
	if info.GitVersion != want {
		t.Errorf("kube-apiserver reports %q, want %q", info.GitVersion, want)
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
	testutil.BinDir(t, "kube", "KUBE_VERSION", "kube-apiserver")
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
