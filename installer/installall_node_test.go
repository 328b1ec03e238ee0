package installer_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
)

// TestInstallAllOnNode: on a node whose containerd is a systemd unit (1.6,
// which keeps every handler in config.toml, and 2.2, with drop-ins), two
// Shims installed in one operation start containerd once (counted in the
// unit's journal), with both canaries passing and both handlers serving
// sandboxes. Then two more Shims, the second of which crashes on start:
// its canary fails and both are rolled back, with one more start for the
// operation and one for the rollback, the config byte for byte as it was.
func TestInstallAllOnNode(t *testing.T) {
	for _, nc := range nodeCases(t) {
		t.Run(nc.name, func(t *testing.T) {
			ctx := context.Background()
			n, _ := bootNode(t, nc)
			inst, rt := criInstaller(t, n)
			srv := testutil.StartFileServer(t)

			starts := n.ContainerdStarts(t)
			both := []*plan.NodePlan{
				withCanary(namedHTTPPlan("demo", srv, "/demo.tar.gz", testutil.NewShimArchive(t, "demo", nc.shim, nil)), "0"),
				withCanary(namedHTTPPlan("ocidemo", srv, "/ocidemo.tar.gz", testutil.NewShimArchive(t, "ocidemo", nc.shim, nil)), "0"),
			}
			res, err := inst.InstallAll(ctx, both)
			if err != nil {
				t.Fatalf("install both: %v\n%s", err, n.Journal("containerd"))
			}
			if got := n.ContainerdStarts(t) - starts; got != 1 {
				t.Errorf("containerd started %d times for two Shims, want 1", got)
			}
			for _, r := range res {
				if !r.Restarted || r.CanaryDuration <= 0 {
					t.Errorf("%s: %+v", r.Shim, r)
				}
			}
			t.Logf("two Shims, one restart: %v (restart and health %v)", res[1].Duration, res[0].RestartDuration)
			for _, h := range []string{"demo", "ocidemo"} {
				if _, _, err := testutil.RunSandbox(ctx, rt, h, "pod-"+h); err != nil {
					t.Fatalf("%s: %v\n%s", h, err, n.Journal("containerd"))
				}
			}
			removeSandboxes(ctx, t, rt)
			installed, err := os.ReadFile(n.Local("/etc/containerd/config.toml"))
			if err != nil {
				t.Fatal(err)
			}

			crash := filepath.Join(t.TempDir(), "containerd-shim-crash-v2")
			if err := os.WriteFile(crash, []byte("#!/bin/sh\necho crashing >&2\nexit 1\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			starts = n.ContainerdStarts(t)
			more := []*plan.NodePlan{
				withCanary(namedHTTPPlan("good", srv, "/good.tar.gz", testutil.NewShimArchive(t, "good", nc.shim, nil)), "0"),
				withCanary(namedHTTPPlan("crash", srv, "/crash.tar.gz", testutil.NewShimArchive(t, "crash", crash, nil)), "0"),
			}
			_, err = inst.InstallAll(ctx, more)
			if !errors.Is(err, installer.ErrRolledBack) || installer.ReasonOf(err) != plan.ReasonCanaryFailed {
				t.Fatalf("a crashing shim beside a good one: %v, want rolled back with CanaryFailed", err)
			}
			if got := n.ContainerdStarts(t) - starts; got != 2 {
				t.Errorf("containerd started %d times, want 2 (the operation's, the rollback's)", got)
			}
			if got, _ := os.ReadFile(n.Local("/etc/containerd/config.toml")); !bytes.Equal(got, installed) {
				t.Errorf("config after the rollback:\n%s", got)
			}
			st, err := inst.Status(ctx)
			if err != nil || len(st) != 2 {
				t.Fatalf("status after the rollback: %+v %v, want demo and ocidemo", st, err)
			}
			for _, s := range st {
				if len(s.Problems) > 0 {
					t.Errorf("%s: %v", s.Name, s.Problems)
				}
			}
			for _, shim := range []string{"good", "crash"} {
				if _, err := os.Stat(n.Local("/opt/shimkit/" + shim)); !os.IsNotExist(err) {
					t.Errorf("bundle of %s left: %v", shim, err)
				}
			}
			assertNoCanaryLeft(ctx, t, n, rt)
		})
	}
}
