package installer_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/shimkit/shimkit/crioconfig"
	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/installertest"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
)

// ociRuntimePlan installs an OCI runtime binary (as crun, runsc or youki
// are) as a handler under containerd's runc shim (options.BinaryName),
// which is an oci handler on CRI-O. binary is what the artifact holds.
func ociRuntimePlan(t testing.TB, srv *testutil.FileServer, shim string, binary []byte, mode int64) *plan.NodePlan {
	t.Helper()
	a := testutil.NewArchive(t, testutil.ArchiveFile{Name: "bin/runc", Mode: mode, Data: binary})
	p := plan.New(plan.ShimRef{Name: shim, UID: "uid-" + shim}, plan.OpInstall)
	p.Artifact = &plan.Artifact{Type: plan.SourceHTTP, URL: srv.Add("/"+shim+".tar.gz", a.Data), Digest: "sha256:" + a.SHA256}
	p.Files = []plan.File{{Source: "runc", Path: "runc", Mode: uint32(mode)}}
	p.Handlers = []plan.Handler{{Name: shim, RuntimeType: "io.containerd.runc.v2", Options: map[string]any{"BinaryName": "$(BUNDLE_DIR)/runc"}}}
	p.Runtime = plan.RuntimeCRIO
	return rehash(p)
}

// crioRoot is a CRI-O node's root filesystem (crio.conf and an admin's
// drop-in) with a counting restarter and a health check that can be told
// to fail: the CRI-O runtime role without a CRI-O.
type crioRoot struct {
	root      string
	restarts  atomic.Int32
	unhealthy atomic.Bool
}

func newCRIORoot(t *testing.T) *crioRoot {
	n := &crioRoot{root: t.TempDir()}
	writeTree(t, n.root, map[string]string{
		"etc/crio/crio.conf":                 "[crio.runtime]\ndefault_runtime = \"crun\"\n",
		"etc/crio/crio.conf.d/50-admin.conf": "[crio.runtime.runtimes.admin-rt]\nruntime_path = \"/usr/bin/runc\"\n",
	})
	return n
}

func (n *crioRoot) installer() *installer.Installer {
	return &installer.Installer{
		HostRoot: n.root, LinkDir: "-",
		Restarter: installer.RestartFunc(func(context.Context) error { n.restarts.Add(1); return nil }),
		Health: installer.HealthFunc(func(_ context.Context, h string, present bool) error {
			if n.unhealthy.Load() && h != "" {
				return installer.ErrUnhealthy
			}
			return nil
		}),
	}
}

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCRIORuntimeRole: a plan for CRI-O goes through the same steps as one
// for containerd, with the CRI-O runtime role: the handler in a drop-in of
// shimkit's own naming the bundle's binary, one restart, a re-run that
// changes nothing, a drop-in removed by hand found (Verify) and put back,
// and an uninstall that leaves /etc/crio byte for byte as it was.
func TestCRIORuntimeRole(t *testing.T) {
	ctx := context.Background()
	n := newCRIORoot(t)
	inst := n.installer()
	srv := testutil.StartFileServer(t)
	etc := filepath.Join(n.root, "etc/crio")
	before := testutil.Tree(t, etc)
	p := ociRuntimePlan(t, srv, "runc-shimkit", []byte("#!/bin/sh\n"), 0o755)

	res, err := inst.Install(ctx, p)
	if err != nil || !res.Changed || !res.Restarted || n.restarts.Load() != 1 {
		t.Fatalf("install: %+v, %v (restarts %d)", res, err, n.restarts.Load())
	}
	dropIn := filepath.Join(etc, "crio.conf.d", crioconfig.DropInName("runc-shimkit"))
	data, err := os.ReadFile(dropIn)
	if err != nil || !strings.Contains(string(data), `runtime_path = "/opt/shimkit/runc-shimkit/current/runc"`) || !strings.Contains(string(data), `runtime_type = "oci"`) {
		t.Fatalf("drop-in %s: %s %v", dropIn, data, err)
	}
	if res, err := inst.Install(ctx, p); err != nil || res.Changed || res.Restarted {
		t.Fatalf("re-install: %+v, %v", res, err)
	}
	if err := os.Remove(dropIn); err != nil {
		t.Fatal(err)
	}
	vp := *p
	vp.Operation = plan.OpVerify
	if res, err := inst.Verify(ctx, &vp); err != nil || !slices.Contains(res.Drift, "handler runc-shimkit is not in CRI-O's config") {
		t.Fatalf("verify after the drop-in went: %+v, %v", res, err)
	}
	n.restarts.Store(0)
	if res, err := inst.Install(ctx, p); err != nil || !res.Restarted || len(res.Drift) == 0 {
		t.Fatalf("repair: %+v, %v", res, err)
	}
	st, err := inst.Status(ctx)
	if err != nil || len(st) != 1 || st[0].State.Runtime != plan.RuntimeCRIO || len(st[0].Problems) > 0 {
		t.Fatalf("status: %+v, %v", st, err)
	}
	if _, err := inst.Uninstall(ctx, uninstallPlan("runc-shimkit")); err != nil {
		t.Fatal(err)
	}
	assertSameTree(t, "install then uninstall", before, testutil.Tree(t, etc))
}

// TestCRIORuntimeRefusals: on CRI-O, a handler CRI-O does not come back
// with is rolled back; a binary that is not executable (CRI-O would drop
// the handler) and a handler an admin defines are refused before CRI-O is
// restarted; /etc/crio stays byte for byte as it was.
func TestCRIORuntimeRefusals(t *testing.T) {
	ctx := context.Background()
	n := newCRIORoot(t)
	inst := n.installer()
	srv := testutil.StartFileServer(t)
	etc := filepath.Join(n.root, "etc/crio")
	installed := testutil.Tree(t, etc)
	n.unhealthy.Store(true)
	_, err := inst.Install(ctx, ociRuntimePlan(t, srv, "other", []byte("#!/bin/sh\n"), 0o755))
	n.unhealthy.Store(false)
	if !errors.Is(err, installer.ErrRolledBack) || installer.ReasonOf(err) != plan.ReasonRestartFailed {
		t.Fatalf("install with an unhealthy CRI-O: %v", err)
	}
	assertSameTree(t, "a rollback", installed, testutil.Tree(t, etc))

	// Refused before anything: a binary CRI-O would drop, an admin's handler.
	restarts := n.restarts.Load()
	_, err = inst.Install(ctx, ociRuntimePlan(t, srv, "noexec", []byte("#!/bin/sh\n"), 0o644))
	if !errors.Is(err, crioconfig.ErrBinary) || installer.ReasonOf(err) != plan.ReasonArtifactInvalid {
		t.Errorf("install of a binary that is not executable: %v (%s)", err, installer.ReasonOf(err))
	}
	_, err = inst.Install(ctx, ociRuntimePlan(t, srv, "admin-rt", []byte("#!/bin/sh\n"), 0o755))
	if !errors.Is(err, installer.ErrConflict) || !strings.Contains(err.Error(), "50-admin.conf") {
		t.Errorf("install over an admin's handler: %v", err)
	}
	if n.restarts.Load() != restarts {
		t.Errorf("a refused install restarted CRI-O")
	}
	assertSameTree(t, "a refused install", installed, testutil.Tree(t, etc))
}

func assertSameTree(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	if !maps.Equal(before, after) {
		t.Errorf("%s changed the tree:\nbefore %v\nafter  %v", what, slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
	}
}

// The in-memory runtime answers what the Installer asks a runtime before it
// adopts or drops a handler.
var _ interface{ HasHandler(string) (bool, error) } = (*installertest.FakeRuntime)(nil)

// TestFakeRuntime: the steps drive any Runtime: the in-memory one gets the
// handler, one restart, nothing on a re-run; a handler it drops at restart
// (as CRI-O drops one it cannot use) fails the check and is rolled back
// with one more restart, the first Shim's handler kept; a runtime that
// does not come back at all is a failed rollback.
func TestFakeRuntime(t *testing.T) {
	ctx := context.Background()
	rt := &installertest.FakeRuntime{Drop: map[string]bool{"dropped": true}}
	inst := &installer.Installer{HostRoot: t.TempDir(), LinkDir: "-", Runtime: rt}
	srv := testutil.StartFileServer(t)
	bin := []byte("#!/bin/sh\n")

	if res, err := inst.Install(ctx, ociRuntimePlan(t, srv, "kept", bin, 0o755)); err != nil || !res.Restarted {
		t.Fatalf("install: %+v, %v", res, err)
	}
	if res, err := inst.Install(ctx, ociRuntimePlan(t, srv, "kept", bin, 0o755)); err != nil || res.Restarted || rt.Restarts() != 1 {
		t.Fatalf("re-install: %+v, %v (restarts %d)", res, err, rt.Restarts())
	}
	_, err := inst.Install(ctx, ociRuntimePlan(t, srv, "dropped", bin, 0o755))
	if !errors.Is(err, installer.ErrRolledBack) || installer.ReasonOf(err) != plan.ReasonRestartFailed {
		t.Fatalf("install of a handler the runtime drops: %v", err)
	}
	if got := rt.Handlers(); !slices.Equal(got, []string{"kept"}) || rt.Restarts() != 3 {
		t.Errorf("after the rollback: handlers %v, restarts %d; want [kept], 3", got, rt.Restarts())
	}
	rt.FailRestart = installer.ErrRestartFailed
	_, err = inst.Uninstall(ctx, uninstallPlan("kept"))
	if !errors.Is(err, installer.ErrRollbackFailed) || installer.ReasonOf(err) != plan.ReasonRestartFailed {
		t.Fatalf("uninstall with a runtime that does not come back: %v", err)
	}
	if got := rt.Handlers(); !slices.Equal(got, []string{"kept"}) {
		t.Errorf("the config was not rolled back: %v", got)
	}
}

// TestCRIOCrashRecovered: an install into CRI-O that dies after its
// drop-in is written (a panic in AfterStep, as a SIGKILL would) leaves a
// pending record naming the runtime and the handler; the next operation
// restores crio.conf.d from crioconfig's journal before anything else and
// restarts CRI-O once.
func TestCRIOCrashRecovered(t *testing.T) {
	ctx := context.Background()
	n := newCRIORoot(t)
	srv := testutil.StartFileServer(t)
	dropIns := filepath.Join(n.root, "etc/crio/crio.conf.d")
	before := testutil.Tree(t, dropIns)
	inst := n.installer()
	inst.AfterStep = func(step string) {
		if step == "configured" {
			panic("killed after configure")
		}
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the install did not die")
			}
		}()
		_, _ = inst.Install(ctx, ociRuntimePlan(t, srv, "runc-shimkit", []byte("#!/bin/sh\n"), 0o755))
	}()
	if _, err := os.Stat(filepath.Join(dropIns, crioconfig.DropInName("runc-shimkit"))); err != nil {
		t.Fatalf("the crash left no drop-in to recover: %v", err)
	}
	st, err := n.installer().Status(ctx)
	if err != nil || len(st) != 1 || !strings.Contains(st[0].Problems[0], "interrupted install is pending") {
		t.Fatalf("status after the crash: %+v, %v", st, err)
	}
	n.restarts.Store(0)
	if _, err := n.installer().Uninstall(ctx, uninstallPlan("runc-shimkit")); err != nil {
		t.Fatal(err)
	}
	assertSameTree(t, "recovery", before, testutil.Tree(t, dropIns))
	if n.restarts.Load() != 1 {
		t.Errorf("recovery restarted CRI-O %d times, want 1", n.restarts.Load())
	}
	if st, err := n.installer().Status(ctx); err != nil || len(st) != 0 {
		t.Errorf("status after recovery: %+v, %v", st, err)
	}
}
