package installer_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
)

// TestStoppedShimRefusesRestart injects the fault of containerd #13848
// on containerd 2.2: another pod's shim process is stopped (SIGSTOP) when
// an install needs containerd restarted. Restarted so, containerd gives
// the shim 5 s to answer and then deletes its task: the pod's containers
// are gone (measured before the check existed: containerd booted in
// 5.35 s, the pod's sandbox and container were no longer running). So
// the installer refuses before the restart, ShimStuck naming the pid and
// the pod; containerd is not restarted, its config is byte for byte as
// it was, and once the shim goes on the pod runs and the same install
// succeeds without harming it.
func TestStoppedShimRefusesRestart(t *testing.T) {
	ctx := context.Background()
	builds := testutil.ContainerdMatrix(t)
	n := testutil.StartNode(t, testutil.NodeOptions{Containerd: &builds[2]})
	// The installer's pod sees the host's /proc under its host root.
	if err := unix.Mount("proc", n.Local("/proc"), "proc", 0, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(n.Local("/proc"), unix.MNT_DETACH) })
	srv := testutil.StartFileServer(t)
	inst := &installer.Installer{HostRoot: n.Root}
	shim := builds[2].Binary("containerd-shim-runc-v2")
	if _, err := inst.Install(ctx, httpPlan(srv, "/demo.tar.gz", testutil.NewShimArchive(t, "demo", shim, nil))); err != nil {
		t.Fatal(err)
	}
	testutil.ImportPause(t, "/usr/bin/ctr", n.Socket())
	rt := runtimeClient(t, n.Socket())
	pods := runLoad(ctx, t, rt, "demo", 0, 1)
	pid := testutil.ShimPID(t, pods[0].sandbox)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	cont := func() { _ = syscall.Kill(pid, syscall.SIGCONT) }
	t.Cleanup(cont)

	cfg, _ := os.ReadFile(n.Local("/etc/containerd/config.toml"))
	starts := n.ContainerdStarts(t)
	p := namedHTTPPlan("other", srv, "/other.tar.gz", testutil.NewShimArchive(t, "other", shim, nil))
	_, err := inst.Install(ctx, p)
	t.Logf("install with a stopped shim: %v", err)
	if installer.ReasonOf(err) != plan.ReasonShimStuck || !errors.Is(err, installer.ErrRolledBack) {
		t.Fatalf("install: %v (reason %s), want ShimStuck, rolled back", err, installer.ReasonOf(err))
	}
	r := installer.Report(p, nil, err)
	want := plan.StuckShim{PID: pid, Command: "containerd-shim-demo-v2", State: "T (stopped)", ID: pods[0].sandbox, Pod: "default/load-000"}
	if r.Hang == nil || !slices.Equal(r.Hang.Shims, []plan.StuckShim{want}) || !strings.Contains(r.Message, want.String()) {
		t.Errorf("result: hang %+v, message %q; want %+v named", r.Hang, r.Message, want)
	}
	if got := n.ContainerdStarts(t); got != starts {
		t.Errorf("containerd started %d times during the refused install", got-starts)
	}
	if got, _ := os.ReadFile(n.Local("/etc/containerd/config.toml")); string(got) != string(cfg) {
		t.Errorf("config after the refusal:\n%s\nwant as before:\n%s", got, cfg)
	}
	if exists(n.Local("/opt/shimkit/other")) {
		t.Error("the refused Shim's bundle is on the node")
	}

	// The shim goes on: its pod is whole, and the install goes through.
	cont()
	if _, err := inst.Install(ctx, p); err != nil {
		t.Fatalf("install once the shim went on: %v", err)
	}
	if broken, execOK := checkLoad(ctx, rt, pods); broken != 0 || execOK != 1 {
		t.Errorf("the pod after the install: %d broken, %d answering exec; want it whole", broken, execOK)
	}
}
