package installer_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shimkit/shimkit/crioconfig"
	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
)

// crioNode is a real CRI-O (testutil.StartCRIO: CRI-O v1.34 built from the
// module proxy) that an Installer installs into: the bundle, the state and
// CRI-O's files under the CRI-O's directory, restarts by stopping and
// starting the process (a node restarts crio.service through systemd;
// neither ever sends SIGHUP), health over its CRI socket.
type crioNode struct {
	c        *testutil.CRIO
	restarts atomic.Int32
	// failNext makes the next restart stop CRI-O and fail, as a restart
	// job that did not come back does; the rollback's restart starts it.
	failNext atomic.Bool
}

func (n *crioNode) installer() *installer.Installer {
	c := n.c
	return &installer.Installer{
		HostRoot:     "/",
		CanarySettle: -1, // no kubelet to reconnect
		Canary: &criCanary{Socket: c.Socket, LogRoot: filepath.Join(c.Dir, "log/canary"),
			CgroupParent: c.CgroupParent(), PidPerContainer: true},
		BundleRoot: filepath.Join(c.Dir, "opt/shimkit"),
		StateDir:   filepath.Join(c.Dir, "var/lib/shimkit"),
		LinkDir:    "-",
		CRIO:       &crioconfig.Target{Config: c.Config, DropInDir: c.DropInDir, StateDir: c.StateDir},
		Restarter: installer.RestartFunc(func(ctx context.Context) error {
			n.restarts.Add(1)
			if n.failNext.CompareAndSwap(true, false) {
				if err := c.Stop(ctx); err != nil {
					return err
				}
				return installer.ErrRestartFailed
			}
			if err := c.Stop(ctx); err != nil {
				return err
			}
			return c.StartProcess()
		}),
		Health: &installer.CRIHealth{Socket: c.Socket, Timeout: 30 * time.Second},
	}
}

// TestRealCRIOInstall installs a plan into a real CRI-O through
// Installer.Install: an OCI runtime (Debian's runc, shipped in the Shim's
// artifact) as an oci handler whose runtime_path is the bundle's "current"
// binary. CRI-O announces the handler in its CRI status after one restart
// and the plan's canary pod runs on it to a zero exit (through CRI, as a
// kubelet would); a re-run changes nothing; a second Shim whose restart
// fails (CRI-O does not come back) is rolled back: /etc/crio byte for
// byte, CRI-O running again without that handler; uninstalling the first
// leaves /etc/crio byte for byte as it was and CRI-O without the handler.
func TestRealCRIOInstall(t *testing.T) {
	t.Parallel() // its own crio
	pause := testutil.PushPauseImage(t, testutil.StartRegistry(t, "", ""))
	n := &crioNode{c: testutil.StartCRIO(t, testutil.WithPauseImage(pause))}
	inst := n.installer()
	ctx := context.Background()
	etc := filepath.Dir(n.c.Config)
	before := testutil.Tree(t, etc)
	runc, err := os.ReadFile("/usr/bin/runc")
	if err != nil {
		t.Fatal(err)
	}
	srv := testutil.StartFileServer(t)
	p := ociRuntimePlan(t, srv, "runc-shimkit", runc, 0o755)
	p.Handlers[0].Options["Root"] = filepath.Join(n.c.Dir, "run/runc-shimkit") // runc's state under the test's directory
	p.Canary = &plan.Canary{Handler: "runc-shimkit", RuntimeClass: "shimkit-canary-runc", Namespace: "shimkit-system",
		Image: pause, Command: []string{"/pause", "exit", "0"}, Timeout: plan.Duration(time.Minute)}
	p = rehash(p)

	res, err := inst.Install(ctx, p)
	if err != nil {
		t.Fatalf("install: %v\n%s", err, n.c.Log.Tail())
	}
	hs := n.c.CRI.Handlers(t)
	t.Logf("CRI-O %s: installed in %v (restart and check %v, canary %v); handlers %v", n.c.Version, res.Duration, res.RestartDuration, res.CanaryDuration, hs)
	if !res.Restarted || n.restarts.Load() != 1 || !slices.Contains(hs, "runc-shimkit") || res.CanaryDuration == 0 {
		t.Fatalf("install: %+v, restarts %d, handlers %v", res, n.restarts.Load(), hs)
	}
	if res, err := inst.Install(ctx, p); err != nil || res.Changed || res.Restarted {
		t.Fatalf("re-install: %+v, %v", res, err)
	}

	installed := testutil.Tree(t, etc)
	n.failNext.Store(true)
	_, err = inst.Install(ctx, ociRuntimePlan(t, srv, "other-shimkit", runc, 0o755))
	if !errors.Is(err, installer.ErrRolledBack) || installer.ReasonOf(err) != plan.ReasonRestartFailed {
		t.Fatalf("install whose restart fails: %v", err)
	}
	t.Logf("rolled back: %v", err)
	assertSameTree(t, "the rollback", installed, testutil.Tree(t, etc))
	if hs := n.c.CRI.Handlers(t); slices.Contains(hs, "other-shimkit") || !slices.Contains(hs, "runc-shimkit") {
		t.Errorf("after the rollback CRI-O serves %v", hs)
	}

	if _, err := inst.Uninstall(ctx, uninstallPlan("runc-shimkit")); err != nil {
		t.Fatalf("uninstall: %v\n%s", err, n.c.Log.Tail())
	}
	assertSameTree(t, "install then uninstall", before, testutil.Tree(t, etc))
	if hs := n.c.CRI.Handlers(t); slices.Contains(hs, "runc-shimkit") {
		t.Errorf("after uninstall CRI-O serves %v", hs)
	}
}

// TestRealCRIOVMHandler: a containerd shim v2 (containerd 1.6's runc shim
// from Debian, shipped as containerd-shim-probe-v2) installed through
// Installer.Install is a vm handler CRI-O announces after the restart;
// the uninstall leaves /etc/crio as it was. (A pod on it cannot start on
// this machine: crioconfig's TestRealCRIOPodOnVMHandler says why.)
func TestRealCRIOVMHandler(t *testing.T) {
	t.Parallel() // its own crio
	n := &crioNode{c: testutil.StartCRIO(t)}
	inst := n.installer()
	ctx := context.Background()
	etc := filepath.Dir(n.c.Config)
	before := testutil.Tree(t, etc)
	shim, err := os.ReadFile("/usr/bin/containerd-shim-runc-v2")
	if err != nil {
		t.Fatal(err)
	}
	srv := testutil.StartFileServer(t)
	a := testutil.NewArchive(t, testutil.ArchiveFile{Name: "containerd-shim-probe-v2", Mode: 0o755, Data: shim})
	p := plan.New(plan.ShimRef{Name: "probe", UID: "uid-probe"}, plan.OpInstall)
	p.Runtime = plan.RuntimeCRIO
	p.Artifact = &plan.Artifact{Type: plan.SourceHTTP, URL: srv.Add("/probe.tar.gz", a.Data), Digest: "sha256:" + a.SHA256}
	p.Files = []plan.File{{Source: "containerd-shim-probe-v2", Path: "containerd-shim-probe-v2", Mode: 0o755}}
	p.Handlers = []plan.Handler{{Name: "probe-vm", RuntimeType: "io.containerd.probe.v2", RuntimePath: "$(BUNDLE_DIR)/containerd-shim-probe-v2"}}
	p = rehash(p)
	if res, err := inst.Install(ctx, p); err != nil || !res.Restarted {
		t.Fatalf("install: %+v, %v\n%s", res, err, n.c.Log.Tail())
	}
	if hs := n.c.CRI.Handlers(t); !slices.Contains(hs, "probe-vm") {
		t.Fatalf("CRI-O serves %v, want probe-vm", hs)
	}
	dropIn, _ := os.ReadFile(filepath.Join(n.c.DropInDir, crioconfig.DropInName("probe-vm")))
	t.Logf("drop-in:\n%s", dropIn)
	if _, err := inst.Uninstall(ctx, uninstallPlan("probe")); err != nil {
		t.Fatal(err)
	}
	assertSameTree(t, "install then uninstall", before, testutil.Tree(t, etc))
}
