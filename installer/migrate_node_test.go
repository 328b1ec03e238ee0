package installer_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
)

// prepareAsRCM leaves the node as runtime-class-manager's node installer
// does for its Shim spin-v2: the binary in /opt/rcm/bin, the lock file, the
// handler block appended to containerd's config (runtime_type the binary's
// path), and containerd restarted.
func prepareAsRCM(ctx context.Context, t *testing.T, n *testutil.Node, shim string) {
	t.Helper()
	bin, err := os.ReadFile(shim)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(n.Local("/opt/rcm/bin"), 0o775); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(n.Local("/opt/rcm/bin/containerd-shim-spin-v2"), bin, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(bin)
	lock := "{\n \"shims\": {\n  \"spin-v2\": {\n   \"sha256\": \"" + hex.EncodeToString(sum[:]) + "\",\n   \"path\": \"/opt/rcm/bin/containerd-shim-spin-v2\"\n  }\n }\n}"
	if err := os.WriteFile(n.Local("/opt/rcm/rcm-lock.json"), []byte(lock), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := n.Local("/etc/containerd/config.toml")
	data, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	domain := "io.containerd.grpc.v1.cri"
	if bytes.Contains(data, []byte("version = 3")) {
		domain = "io.containerd.cri.v1.runtime"
	}
	// Without containerdRuntimeOptions (its default): an options table under
	// a runtime_type that is a path makes containerd 2.x look for an options
	// type the runc shim of this test does not know.
	data = append(data, "\n# RCM runtime config for spin-v2\n[plugins.\""+domain+"\".containerd.runtimes.spin-v2]\nruntime_type = \"/opt/rcm/bin/containerd-shim-spin-v2\"\n"...)
	if err := os.WriteFile(cfg, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := n.Exec(ctx, "systemctl", "restart", "containerd"); err != nil {
		t.Fatalf("restart: %v %s", err, out)
	}
	if err := (&installer.CRIHealth{Socket: n.Socket()}).Check(ctx, "spin-v2", true); err != nil {
		t.Fatalf("the node as runtime-class-manager leaves it: %v\n%s", err, n.Journal("containerd"))
	}
}

// TestMigrateFromRCM takes a node that runtime-class-manager set up (on
// containerd 2.2) over: one install with one containerd restart replaces
// its handler block, binary and lock file by the Shim's; pods of the
// handler then run the Shim's binary; nothing of runtime-class-manager is
// left, and uninstalling gives back the config from before either of them.
// A handler of that name that runtime-class-manager did not write is not
// taken over.
func TestMigrateFromRCM(t *testing.T) {
	ctx := context.Background()
	nc := nodeCases(t)[1]
	n, orig := bootNode(t, nc)
	srv := testutil.StartFileServer(t)
	rt := runtimeClient(t, n.Socket())
	prepareAsRCM(ctx, t, n, nc.shim)
	if _, exe, err := testutil.RunSandbox(ctx, rt, "spin-v2", "pod-rcm"); err != nil || exe != "/opt/rcm/bin/containerd-shim-spin-v2" {
		t.Fatalf("runtime-class-manager's handler runs %q: %v", exe, err)
	}
	removeSandboxes(ctx, t, rt)

	// A migration whose containerd does not come back leaves the node as
	// runtime-class-manager had it, and serving.
	rcmState := snapshot(t, n.Root, "/etc/containerd", "/opt")
	broken := sameTypePlan(t, srv, "spin-v2", nc.shim)
	broken.Migrate = &plan.Migration{From: plan.FromRuntimeClassManager, Handler: "spin-v2"}
	broken.Handlers[0].Settings = map[string]any{"base_runtime_spec": "/nonexistent/spec.json"}
	failing := &installer.Installer{HostRoot: n.Root, Health: &installer.CRIHealth{Socket: n.Socket(), Timeout: 3 * time.Second}}
	if _, err := failing.Install(ctx, rehash(broken)); !errors.Is(err, installer.ErrRolledBack) {
		t.Fatalf("broken migration: %v, want rolled back", err)
	}
	if got := snapshot(t, n.Root, "/etc/containerd", "/opt"); got != rcmState {
		t.Errorf("after the rollback:\n%s\nwant runtime-class-manager's node:\n%s", got, rcmState)
	}
	if _, exe, err := testutil.RunSandbox(ctx, rt, "spin-v2", "pod-rcm-again"); err != nil || exe != "/opt/rcm/bin/containerd-shim-spin-v2" {
		t.Errorf("after the rollback the handler runs %q: %v", exe, err)
	}
	removeSandboxes(ctx, t, rt)

	var restarts atomic.Int32
	sd := &installer.SystemdRestarter{HostRoot: n.Root, Units: []string{"containerd"}}
	inst := &installer.Installer{HostRoot: n.Root, Restarter: installer.RestartFunc(func(ctx context.Context) error {
		restarts.Add(1)
		return sd.Restart(ctx)
	})}
	p := sameTypePlan(t, srv, "spin-v2", nc.shim)
	p.Handlers[0].Name = "spin-v2"
	p.Migrate = &plan.Migration{From: plan.FromRuntimeClassManager, Handler: "spin-v2"}
	if _, err := inst.Install(ctx, rehash(p)); err != nil {
		t.Fatalf("migrate: %v\n%s", err, n.Journal("containerd"))
	}
	if restarts.Load() != 1 {
		t.Errorf("%d containerd restarts, want 1", restarts.Load())
	}
	cfg, _ := os.ReadFile(n.Local("/etc/containerd/config.toml"))
	if bytes.Contains(cfg, []byte("RCM")) || bytes.Contains(cfg, []byte("/opt/rcm")) {
		t.Errorf("runtime-class-manager's block is left:\n%s", cfg)
	}
	if exists(n.Local("/opt/rcm")) {
		t.Error("/opt/rcm is left")
	}
	assertOwnBinary(ctx, t, n, rt, "spin-v2")

	if _, err := inst.Uninstall(ctx, uninstallPlan("spin-v2")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(n.Local("/etc/containerd/config.toml")); !bytes.Equal(got, orig) {
		t.Errorf("config after uninstall is not the one from before runtime-class-manager:\n%s", got)
	}
	assertClean(t, n)

	t.Run("not runtime-class-manager's", func(t *testing.T) {
		cfg := n.Local("/etc/containerd/config.toml")
		admin := append(bytes.Clone(orig), "\n[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.spin-v2]\n  runtime_type = \"io.containerd.spin.v2\"\n"...)
		if err := os.WriteFile(cfg, admin, 0o644); err != nil {
			t.Fatal(err)
		}
		dirs := []string{"/etc/containerd", "/opt", "/usr/local/bin"}
		before := snapshot(t, n.Root, dirs...)
		res, err := inst.Install(ctx, rehash(p))
		r := installer.Report(p, res, err)
		if r.Reason != plan.ReasonConflict || !strings.Contains(r.Message, "not written by the installer being migrated from") {
			t.Errorf("%s/%s %q, want Conflict", r.Outcome, r.Reason, r.Message)
		}
		if after := snapshot(t, n.Root, dirs...); after != before {
			t.Errorf("node changed:\n%s", after)
		}
	})
}
