package installer_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
)

// readOnlyDir makes dir a read-only bind mount of itself for the test, as
// an immutable host's /opt or /etc.
func readOnlyDir(t *testing.T, dir string) {
	t.Helper()
	if err := unix.Mount(dir, dir, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind mount %s: %v", dir, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount %s read-only: %v", dir, err)
	}
}

// TestReadOnlyHost: on a node whose bundle root is on a read-only
// filesystem (COS's /opt), the install fails before it changes anything
// (no lock, no state, no config edit, no restart) with ReadOnlyHost
// naming the directory, and the installer exits as refused; with the
// bundle root moved to a writable, executable directory (COS's
// /home/kubernetes/bin), the same plan installs and a sandbox runs.
func TestReadOnlyHost(t *testing.T) {
	b := testutil.ContainerdMatrix(t)[2]
	ctx := context.Background()
	n := newProcNode(t, b)
	opt := filepath.Join(n.dir, "opt")
	if err := os.Mkdir(opt, 0o755); err != nil {
		t.Fatal(err)
	}
	readOnlyDir(t, opt)
	inst := n.installer()
	inst.BundleRoot = filepath.Join(opt, "shimkit")
	srv := testutil.StartFileServer(t)
	a := testutil.NewShimArchive(t, "demo", b.Binary("containerd-shim-runc-v2"), nil)

	_, err := inst.Install(ctx, httpPlan(srv, "/demo.tar.gz", a))
	if !errors.Is(err, installer.ErrReadOnlyHost) || installer.ReasonOf(err) != plan.ReasonReadOnlyHost || !plan.ReasonReadOnlyHost.Permanent() {
		t.Fatalf("install on a read-only bundle root: %v (reason %s)", err, installer.ReasonOf(err))
	}
	if !strings.Contains(err.Error(), "the bundle root "+inst.BundleRoot) || !strings.Contains(err.Error(), "at "+opt) {
		t.Errorf("the error does not name the directory: %v", err)
	}
	t.Logf("refused: %v", err)
	if cfg, _ := os.ReadFile(n.c.ConfigPath); !bytes.Equal(cfg, n.original) {
		t.Errorf("the config changed:\n%s", cfg)
	}
	if _, err := os.Stat(filepath.Join(n.dir, "state")); !os.IsNotExist(err) {
		t.Errorf("the state directory was written (the lock): %v", err)
	}
	if n.restarts.Load() != 0 {
		t.Errorf("containerd restarted %d times", n.restarts.Load())
	}

	inst.BundleRoot = filepath.Join(n.dir, "home", "kubernetes", "bin")
	if _, err := inst.Install(ctx, httpPlan(srv, "/demo.tar.gz", a)); err != nil {
		t.Fatalf("install with a writable bundle root: %v\n%s", err, n.c.LogTail())
	}
	if _, exe, err := testutil.RunSandbox(ctx, n.c.Runtime(t), "demo", "ro"); err != nil || !strings.HasPrefix(exe, inst.BundleRoot) {
		t.Errorf("sandbox: %s %v; want the shim from %s", exe, err, inst.BundleRoot)
	}
}

// noexecDir mounts a fresh tmpfs with noexec on dir for the test, as COS
// mounts some writable directories.
func noexecDir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOEXEC|unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		t.Fatalf("mount a noexec tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
}

// TestReadOnlyHostNoexec: a bundle root that is writable but on a
// filesystem mounted noexec (containerd could not run the shims there) is
// refused like a read-only one, before anything changes, with
// ReadOnlyHost naming the directory and "mounted noexec"; a noexec link
// directory is not (its symlinks run the bundle's binaries, and the
// kernel checks noexec on the mount of the file a symlink resolves to):
// on containerd 1.6, which finds a sandbox's shim by name on its PATH,
// the shim runs through a link there.
func TestReadOnlyHostNoexec(t *testing.T) {
	b := testutil.ContainerdMatrix(t)[0] // 1.6: the PATH link is what runs the sandbox's shim
	ctx := context.Background()
	n := newProcNode(t, b)
	home := filepath.Join(n.dir, "home")
	noexecDir(t, home)
	inst := n.installer()
	inst.BundleRoot = filepath.Join(home, "shimkit")
	srv := testutil.StartFileServer(t)
	a := testutil.NewShimArchive(t, "demo", b.Binary("containerd-shim-runc-v2"), nil)

	_, err := inst.Install(ctx, httpPlan(srv, "/demo.tar.gz", a))
	if !errors.Is(err, installer.ErrReadOnlyHost) || installer.ReasonOf(err) != plan.ReasonReadOnlyHost {
		t.Fatalf("install on a noexec bundle root: %v (reason %s)", err, installer.ReasonOf(err))
	}
	for _, want := range []string{"the bundle root " + inst.BundleRoot, "mounted noexec", "at " + home} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q: %v", want, err)
		}
	}
	t.Logf("refused: %v", err)
	if cfg, _ := os.ReadFile(n.c.ConfigPath); !bytes.Equal(cfg, n.original) {
		t.Errorf("the config changed:\n%s", cfg)
	}
	if _, err := os.Stat(filepath.Join(n.dir, "state")); !os.IsNotExist(err) {
		t.Errorf("the state directory was written (the lock): %v", err)
	}
	if _, err := os.Stat(inst.BundleRoot); !os.IsNotExist(err) {
		t.Errorf("the bundle root was created: %v", err)
	}
	if n.restarts.Load() != 0 {
		t.Errorf("containerd restarted %d times", n.restarts.Load())
	}

	// The bundle root on an executable filesystem, the link directory
	// (on containerd's PATH) noexec: installed, the sandbox's shim found
	// through the link.
	noexecDir(t, inst.LinkDir)
	inst.BundleRoot = filepath.Join(n.dir, "bundles")
	if _, err := inst.Install(ctx, httpPlan(srv, "/demo.tar.gz", a)); err != nil {
		t.Fatalf("install with a noexec link directory: %v\n%s", err, n.c.LogTail())
	}
	link := filepath.Join(inst.LinkDir, "containerd-shim-demo-v2")
	if target, err := os.Readlink(link); err != nil || !strings.HasPrefix(target, inst.BundleRoot) {
		t.Fatalf("link %s -> %q (%v); want one into %s", link, target, err, inst.BundleRoot)
	}
	if _, exe, err := testutil.RunSandbox(ctx, n.c.Runtime(t), "demo", "noexec"); err != nil || !strings.HasPrefix(exe, inst.BundleRoot) {
		t.Errorf("sandbox: %s %v; want the shim from %s", exe, err, inst.BundleRoot)
	}
}
