package installer_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
)

// TestInstallAtBoot: a node image that carries shimkit-installer, a node
// plan and the units `shimkit-installer boot-units` writes boots with the
// shim's handler registered before containerd's first start: the boot
// unit succeeded before containerd started, containerd is the process it
// started then, and runs a sandbox of the handler. The operator's install
// Job of the same plan then changes nothing and restarts nothing.
func TestInstallAtBoot(t *testing.T) {
	ctx := context.Background()
	build := &testutil.ContainerdMatrix(t)[2]
	srv := testutil.StartFileServer(t) // on loopback: the node shares this machine's network
	p := httpPlan(srv, "/v1.tar.gz", testutil.NewShimArchive(t, "demo", build.Binary("containerd-shim-runc-v2"), nil))
	doc, err := plan.Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	files, exes := testutil.BootImage(t, doc, "containerd")
	n := testutil.StartNode(t, testutil.NodeOptions{Containerd: build, HostNetwork: true, Files: files, Executables: exes})

	if r := n.UnitProp(t, "shimkit-boot", "Result"); r != "success" {
		t.Fatalf("boot unit: %s\n%s", r, n.Journal("shimkit-boot"))
	}
	booted := mono(t, n.UnitProp(t, "shimkit-boot", "ExecMainExitTimestampMonotonic"))
	started := mono(t, n.UnitProp(t, "containerd", "ExecMainStartTimestampMonotonic"))
	if booted == 0 || started < booted {
		t.Errorf("containerd started at %d µs, the boot install ended at %d µs: not after it", started, booted)
	}
	pid := n.UnitProp(t, "containerd", "MainPID")
	testutil.ImportPause(t, "/usr/bin/ctr", n.Socket())
	if _, _, err := testutil.RunSandbox(ctx, runtimeClient(t, n.Socket()), "demo", "pod-demo"); err != nil {
		t.Fatalf("a sandbox of the handler installed at boot: %v\n%s", err, n.Journal("containerd"))
	}
	if got := n.UnitProp(t, "containerd", "MainPID"); got != pid {
		t.Errorf("containerd's pid went %s → %s", pid, got)
	}

	// The operator's install Job, once the node joined: nothing to change.
	res, err := (&installer.Installer{HostRoot: n.Root}).Install(ctx, p)
	if err != nil {
		t.Fatalf("install after boot: %v", err)
	}
	if res.Restarted || n.UnitProp(t, "containerd", "MainPID") != pid {
		t.Errorf("install after boot restarted containerd: %+v", res)
	}
	t.Logf("boot install ended %d ms before containerd started; the install after boot took %v, no restart", (started-booted)/1000, res.Duration)
}

// mono is a systemd monotonic timestamp (µs).
func mono(t *testing.T, s string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("timestamp %q: %v", s, err)
	}
	return v
}
