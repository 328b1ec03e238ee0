package installer_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
)

// procNode is a node whose containerd is a test process, restarted by the
// installer through a RestartFunc that counts restarts and overlaps.
type procNode struct {
	c        *testutil.Containerd
	dir      string
	original []byte
	preset   containerdconfig.Preset

	restarts    atomic.Int32
	inRestart   atomic.Int32
	maxParallel atomic.Int32
}

func newProcNode(t *testing.T, b testutil.ContainerdBuild) *procNode {
	t.Helper()
	dir := t.TempDir()
	n := &procNode{dir: dir, original: b.MinimalConfig()}
	n.c = testutil.StartContainerd(t, b, n.original, testutil.WithPath(filepath.Join(dir, "link")))
	n.c.ImportPause(t)
	n.preset = containerdconfig.Preset{Name: containerdconfig.PresetContainerd, Config: n.c.ConfigPath, Socket: n.c.Socket}
	return n
}

func (n *procNode) installer() *installer.Installer {
	return &installer.Installer{
		HostRoot:   "/",
		BundleRoot: filepath.Join(n.dir, "bundles"),
		LinkDir:    filepath.Join(n.dir, "link"),
		StateDir:   filepath.Join(n.dir, "state"),
		Preset:     &n.preset,
		Restarter: installer.RestartFunc(func(ctx context.Context) error {
			cur := n.inRestart.Add(1)
			defer n.inRestart.Add(-1)
			for {
				m := n.maxParallel.Load()
				if cur <= m || n.maxParallel.CompareAndSwap(m, cur) {
					break
				}
			}
			n.restarts.Add(1)
			return n.c.RestartProcess(ctx)
		}),
		Health:    &installer.CRIHealth{Socket: n.c.Socket, Timeout: 15 * time.Second},
		Sandboxes: &installer.CRISandboxes{Socket: n.c.Socket},
	}
}

// TestLifecycle installs a shim from HTTP on every containerd of the
// matrix, runs a pod sandbox on it, re-runs the install (no-op), upgrades
// it, and uninstalls it, leaving the config byte-identical.
func TestLifecycle(t *testing.T) {
	for _, b := range testutil.ContainerdMatrix(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			n := newProcNode(t, b)
			inst := n.installer()
			srv := testutil.StartFileServer(t)
			v1 := testutil.NewShimArchive(t, "demo", b.Binary("containerd-shim-runc-v2"), nil)

			res, err := inst.Install(ctx, httpPlan(srv, "/v1.tar.gz", v1))
			if err != nil {
				t.Fatalf("install: %v\n%s", err, n.c.LogTail())
			}
			if !res.Changed || !res.Restarted || res.Upgrade || n.restarts.Load() != 1 {
				t.Errorf("install: %+v, %d restarts", res, n.restarts.Load())
			}
			bin := installedBinary(t, filepath.Join(n.dir, "bundles"), "demo")
			rt := n.c.Runtime(t)
			id, exe, err := testutil.RunSandbox(ctx, rt, "demo", "first")
			if err != nil {
				t.Fatalf("%v\n%s", err, n.c.LogTail())
			}
			if exe != bin {
				t.Errorf("the sandbox runs %s, want the installed %s", exe, bin)
			}

			// The same spec again: nothing to do, no restart.
			res, err = inst.Install(ctx, httpPlan(srv, "/v1.tar.gz", v1))
			if err != nil || res.Changed || res.Restarted || n.restarts.Load() != 1 {
				t.Errorf("re-run: %+v err=%v, %d restarts; want a no-op", res, err, n.restarts.Load())
			}

			// Upgrade: a new artifact under the same handler. The binary is
			// replaced by rename (the running shim keeps its file); the
			// config does not change, so containerd is not restarted.
			before, _ := os.Stat(filepath.Join(n.dir, "bundles", "demo", "current", "containerd-shim-demo-v2"))
			v2 := testutil.NewShimArchive(t, "demo", b.Binary("containerd-shim-runc-v2"), map[string]string{"VERSION": "2\n"})
			res, err = inst.Install(ctx, httpPlan(srv, "/v2.tar.gz", v2))
			if err != nil {
				t.Fatal(err)
			}
			after, _ := os.Stat(filepath.Join(n.dir, "bundles", "demo", "current", "containerd-shim-demo-v2"))
			if !exists(bin) {
				t.Errorf("the old version %s went while the sandbox started from it runs", bin)
			}
			if !res.Upgrade || res.Digest != "sha256:"+v2.SHA256 || os.SameFile(before, after) {
				t.Errorf("upgrade: %+v; binary replaced: %v", res, !os.SameFile(before, after))
			}
			if _, _, err := testutil.RunSandbox(ctx, rt, "demo", "second"); err != nil {
				t.Fatal(err)
			}
			status, err := inst.Status(ctx)
			if err != nil || len(status) != 1 || len(status[0].Problems) != 0 || status[0].State.Digest != res.Digest {
				t.Errorf("status: %+v %v", status, err)
			}
			// The cache keeps the installed artifact only.
			cache := filepath.Join(n.dir, "state", "cache")
			if got, want := filesUnder(t, cache), []string{filepath.Join(cache, "blobs", "sha256", v2.SHA256)}; !slices.Equal(got, want) {
				t.Errorf("the artifact cache after the upgrade holds %q, want %q", got, want)
			}

			// An uninstall while sandboxes run with the handler changes
			// nothing, and names them.
			second := installedBinary(t, filepath.Join(n.dir, "bundles"), "demo")
			cfg, _ := os.ReadFile(n.c.ConfigPath)
			restarts := n.restarts.Load()
			_, err = inst.Uninstall(ctx, uninstallPlan("demo"))
			var inUse *installer.InUseError
			if !errors.Is(err, installer.ErrHandlerInUse) || !errors.As(err, &inUse) || len(inUse.Sandboxes) != 2 {
				t.Fatalf("uninstall with two sandboxes running: %v", err)
			}
			r := installer.Report(uninstallPlan("demo"), nil, err)
			if r.Outcome != plan.Failed || r.Reason != plan.ReasonHandlerInUse || len(r.InUse) != 2 || r.InUse[0].Name != "first" || r.InUse[1].Name != "second" {
				t.Errorf("result: %+v", r)
			}
			if got, _ := os.ReadFile(n.c.ConfigPath); !bytes.Equal(got, cfg) || n.restarts.Load() != restarts || !exists(second) || !exists(bin) {
				t.Errorf("a refused uninstall changed the node: config changed %v, %d restarts, binary there %v",
					!bytes.Equal(got, cfg), n.restarts.Load()-restarts, exists(second))
			}
			if st, err := rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id}); err != nil || st.GetStatus().GetState() != runtimeapi.PodSandboxState_SANDBOX_READY {
				t.Errorf("the sandbox after the refused uninstall: %v %v", st.GetStatus().GetState(), err)
			}

			// The pods go (as the kubelet stops them); the next operation
			// prunes the version none runs from any more.
			list, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
			if err != nil {
				t.Fatal(err)
			}
			for _, sb := range list.Items {
				_, _ = rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id})
			}
			if _, err := inst.Install(ctx, httpPlan(srv, "/v2.tar.gz", v2)); err != nil || exists(bin) {
				t.Errorf("re-run with no sandbox running: %v; old version still there: %v", err, exists(bin))
			}
			res, err = inst.Uninstall(ctx, uninstallPlan("demo"))
			if err != nil {
				t.Fatal(err)
			}
			if !res.Changed || !res.Restarted {
				t.Errorf("uninstall: %+v", res)
			}
			if got, _ := os.ReadFile(n.c.ConfigPath); !bytes.Equal(got, n.original) {
				t.Errorf("config after uninstall:\n%s\nwant\n%s", got, n.original)
			}
			for _, p := range []string{filepath.Join(n.dir, "bundles", "demo"), filepath.Join(n.dir, "link", "containerd-shim-demo-v2")} {
				if _, err := os.Lstat(p); !os.IsNotExist(err) {
					t.Errorf("%s still there: %v", p, err)
				}
			}
			if status, _ := inst.Status(ctx); len(status) != 0 {
				t.Errorf("status after uninstall: %+v", status)
			}
			// No Shim left: nor is the state file, the cache or the lock.
			if left := filesUnder(t, filepath.Join(n.dir, "state")); len(left) != 0 {
				t.Errorf("the state directory after the last uninstall holds %q", left)
			}
			if _, _, err := testutil.RunSandbox(ctx, rt, "demo", "third"); err == nil {
				t.Error("a sandbox still runs with the removed handler")
			}
		})
	}
}

// TestBrokenSettingRollsBack installs a handler whose setting keeps the
// CRI plugin from starting: the installer sees containerd unhealthy,
// restores the config byte for byte and the binary, restarts containerd
// again, and says so.
func TestBrokenSettingRollsBack(t *testing.T) {
	for _, b := range testutil.ContainerdMatrix(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			n := newProcNode(t, b)
			inst := n.installer()
			inst.Health = &installer.CRIHealth{Socket: n.c.Socket, Timeout: 3 * time.Second}
			srv := testutil.StartFileServer(t)
			p := httpPlan(srv, "/v1.tar.gz", testutil.NewShimArchive(t, "demo", b.Binary("containerd-shim-runc-v2"), nil))
			p.Handlers[0].Settings = map[string]any{"base_runtime_spec": "/nonexistent/spec.json"}
			res, err := inst.Install(ctx, rehash(p))
			if !errors.Is(err, installer.ErrRolledBack) {
				t.Fatalf("err = %v, want ErrRolledBack", err)
			}
			if !errors.Is(err, installer.ErrUnhealthy) {
				t.Errorf("err = %v, want it to say containerd was unhealthy", err)
			}
			if got, _ := os.ReadFile(n.c.ConfigPath); !bytes.Equal(got, n.original) {
				t.Errorf("config after rollback:\n%s", got)
			}
			if entries, _ := os.ReadDir(filepath.Dir(n.c.ConfigPath)); hasSuffix(entries, ".shimkit-journal") {
				t.Errorf("backup left: %v", entries)
			}
			if _, err := os.Stat(filepath.Join(n.dir, "bundles", "demo", "current")); !os.IsNotExist(err) {
				t.Errorf("bundle left after rollback: %v", err)
			}
			if r := installer.Report(p, res, err); r.Outcome != plan.RolledBack || r.Reason != plan.ReasonRestartFailed {
				t.Errorf("result: %+v", r)
			}
			if err := (&installer.CRIHealth{Socket: n.c.Socket, Timeout: 10 * time.Second}).Check(ctx, "", true); err != nil {
				t.Errorf("containerd not healthy after rollback: %v", err)
			}
			if n.restarts.Load() != 2 {
				t.Errorf("%d restarts, want 2 (install, rollback)", n.restarts.Load())
			}
			if status, _ := inst.Status(ctx); len(status) != 0 {
				t.Errorf("state after rollback: %+v", status)
			}
		})
	}
}

// TestConcurrentInstallsAreSerialised installs two shims at once through
// two installers on one node: both succeed and restarts never overlap.
func TestConcurrentInstallsAreSerialised(t *testing.T) {
	b := testutil.ContainerdMatrix(t)[2] // 2.2
	ctx := context.Background()
	n := newProcNode(t, b)
	srv := testutil.StartFileServer(t)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for k, name := range []string{"alpha", "beta"} {
		a := testutil.NewShimArchive(t, name, b.Binary("containerd-shim-runc-v2"), nil)
		p := namedHTTPPlan(name, srv, "/"+name+".tar.gz", a)
		inst := n.installer()
		wg.Go(func() { _, errs[k] = inst.Install(ctx, p) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n.restarts.Load() != 2 || n.maxParallel.Load() != 1 {
		t.Errorf("%d restarts, at most %d at once; want 2, 1", n.restarts.Load(), n.maxParallel.Load())
	}
	status, _ := n.installer().Status(ctx)
	if len(status) != 2 {
		t.Errorf("status: %+v", status)
	}
	for _, h := range []string{"alpha", "beta"} {
		if err := (&installer.CRIHealth{Socket: n.c.Socket}).Check(ctx, h, true); err != nil {
			t.Error(err)
		}
	}
}

func hasSuffix(entries []os.DirEntry, suffix string) bool {
	for _, e := range entries {
		if filepath.Ext(e.Name()) == suffix {
			return true
		}
	}
	return false
}
