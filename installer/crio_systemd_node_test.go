package installer_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shimkit/shimkit/crioconfig"
	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
)

// crunPlan is a Shim that ships an OCI runtime binary as its bundle's
// crun, an oci handler on CRI-O (options.BinaryName, in containerd's
// terms). The plan names no runtime: the installer detects the node's.
func crunPlan(t *testing.T, srv *testutil.FileServer, shim string, binary []byte) *plan.NodePlan {
	t.Helper()
	a := testutil.NewArchive(t, testutil.ArchiveFile{Name: "bin/crun", Mode: 0o755, Data: binary})
	p := plan.New(plan.ShimRef{Name: shim, UID: "uid-" + shim}, plan.OpInstall)
	p.Artifact = &plan.Artifact{Type: plan.SourceHTTP, URL: srv.Add("/"+shim+".tar.gz", a.Data), Digest: "sha256:" + a.SHA256}
	p.Files = []plan.File{{Source: "crun", Path: "crun", Mode: 0o755}}
	p.Handlers = []plan.Handler{{Name: shim, RuntimeType: "io.containerd.runc.v2", Options: map[string]any{"BinaryName": "$(BUNDLE_DIR)/crun"}}}
	return rehash(p)
}

// TestCRIOSystemdNode installs an OCI runtime Shim (Debian's crun, shipped
// in the Shim's artifact) into a CRI-O node (testutil.NodeOptions.CRIO:
// crio.service under systemd) through Installer.Install with every
// default, as the installer's Job does: the runtime detected from the
// node's files and socket, crio.service restarted through systemd over
// the node's D-Bus (a new main process, never a SIGHUP), the handler
// required in CRI-O's CRI status. A re-run restarts nothing; the
// uninstall restarts CRI-O without the handler and leaves /etc/crio byte
// for byte as it was, CRI-O's own drop-in included.
func TestCRIOSystemdNode(t *testing.T) {
	ctx := context.Background()
	n := testutil.StartNode(t, testutil.NodeOptions{CRIO: true})
	etc := n.Local("/etc/crio")
	before := testutil.Tree(t, etc)
	crun, err := os.ReadFile(n.Local("/usr/bin/crun"))
	if err != nil {
		t.Fatal(err)
	}
	srv := testutil.StartFileServer(t)
	inst := &installer.Installer{HostRoot: n.Root} // every default: detection, systemd over D-Bus, CRI health
	pid := n.UnitProp(t, "crio", "MainPID")

	res, err := inst.Install(ctx, crunPlan(t, srv, "crun-shimkit", crun))
	if err != nil {
		t.Fatalf("install: %v\n%s", err, n.Journal("crio"))
	}
	hs := (testutil.CRIEndpoint{Socket: n.Socket()}).Handlers(t)
	t.Logf("CRI-O node: installed in %v (restart and check %v); handlers %v", res.Duration, res.RestartDuration, hs)
	if newPID := n.UnitProp(t, "crio", "MainPID"); !res.Restarted || newPID == pid || newPID == "0" {
		t.Errorf("crio.service was not restarted by systemd: %+v, main pid %s then %s", res, pid, newPID)
	}
	if res.Runtime != plan.RuntimeCRIO || res.RestartedUnit != "crio.service" {
		t.Errorf("the result names runtime %q, unit %q; want %q, crio.service", res.Runtime, res.RestartedUnit, plan.RuntimeCRIO)
	}
	if !slices.Contains(hs, "crun-shimkit") {
		t.Fatalf("CRI-O serves %v, want crun-shimkit\n%s", hs, n.Journal("crio"))
	}
	dropIn, err := os.ReadFile(n.Local(filepath.Join(crioconfig.DefaultDropInDir, crioconfig.DropInName("crun-shimkit"))))
	if err != nil || !strings.Contains(string(dropIn), `runtime_type = "oci"`) || !strings.Contains(string(dropIn), "/opt/shimkit/crun-shimkit/") {
		t.Errorf("drop-in: %v\n%s", err, dropIn)
	}
	t.Logf("drop-in:\n%s", dropIn)
	// CRI-O logs "Reloading configuration" on a SIGHUP, systemd "Reloading"
	// for the unit's ExecReload.
	if out, err := n.Exec(ctx, "journalctl", "--no-pager", "-o", "cat", "-u", "crio"); err != nil || strings.Contains(string(out), "Reloading") {
		t.Errorf("CRI-O was reloaded (%v):\n%s", err, out)
	}

	starts := n.ContainerdStarts(t) // systemd's "Started crio.service" lines
	if res, err := inst.Install(ctx, crunPlan(t, srv, "crun-shimkit", crun)); err != nil || res.Changed || res.Restarted {
		t.Errorf("re-run: %+v, %v", res, err)
	}
	if got := n.ContainerdStarts(t); got != starts {
		t.Errorf("a re-run restarted crio.service (%d starts, then %d)", starts, got)
	}

	res, err = inst.Uninstall(ctx, uninstallPlan("crun-shimkit"))
	if err != nil || !res.Restarted || res.RestartedUnit != "crio.service" {
		t.Fatalf("uninstall: %+v, %v\n%s", res, err, n.Journal("crio"))
	}
	if hs := (testutil.CRIEndpoint{Socket: n.Socket()}).Handlers(t); slices.Contains(hs, "crun-shimkit") {
		t.Errorf("after the uninstall CRI-O serves %v", hs)
	}
	assertSameTree(t, "install then uninstall", before, testutil.Tree(t, etc))
	if exists(n.Local("/opt/shimkit/crun-shimkit")) {
		t.Error("left on the node: /opt/shimkit/crun-shimkit")
	}
}

// TestCRIOSystemdNodeRollsBack: a Shim whose runtime binary is broken (it
// never answers, as CRI-O's start runs `<runtime_path> --version` and
// waits) keeps crio.service from coming back: the unit stays activating,
// as CRI-O's unit has TimeoutStartSec=0. The installer gives up on the
// restart, removes its drop-in, restarts crio.service through systemd
// again, and CRI-O serves what it served before, /etc/crio byte for byte
// as it was.
func TestCRIOSystemdNodeRollsBack(t *testing.T) {
	ctx := context.Background()
	n := testutil.StartNode(t, testutil.NodeOptions{CRIO: true})
	etc := n.Local("/etc/crio")
	before := testutil.Tree(t, etc)
	hsBefore := (testutil.CRIEndpoint{Socket: n.Socket()}).Handlers(t)
	srv := testutil.StartFileServer(t)
	hang := []byte("#!/bin/sh\n# A broken OCI runtime: it never answers.\nexec sleep 3600\n")
	p := crunPlan(t, srv, "hung-shimkit", hang)
	p.Restart.Timeout = plan.Duration(10 * time.Second)
	p = rehash(p)
	inst := &installer.Installer{HostRoot: n.Root}
	start := time.Now()
	ictx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	_, err := inst.Install(ictx, p)
	t.Logf("install of a hanging runtime ended after %v: %v", time.Since(start), err)
	if !errors.Is(err, installer.ErrRolledBack) || installer.ReasonOf(err) != plan.ReasonRestartFailed {
		t.Fatalf("install: %v (reason %s), want rolled back after a failed restart\n%s", err, installer.ReasonOf(err), n.Journal("crio"))
	}
	// The failure says what the node showed: the unit still starting.
	if h := installer.Report(p, nil, err).Hang; h == nil || h.Unit != "crio.service" || h.ActiveState != "activating" {
		t.Errorf("result's hang: %+v, want crio.service activating", h)
	}
	if st := n.UnitProp(t, "crio", "ActiveState"); st != "active" {
		t.Errorf("crio.service is %s after the rollback\n%s", st, n.Journal("crio"))
	}
	// (CRI-O lists its handlers in no fixed order.)
	if hs := (testutil.CRIEndpoint{Socket: n.Socket()}).Handlers(t); !slices.Equal(hs, hsBefore) {
		t.Errorf("after the rollback CRI-O serves %v, before %v", hs, hsBefore)
	}
	assertSameTree(t, "the rollback", before, testutil.Tree(t, etc))
}

// TestCRIOSystemdNodeCgroupfsRefused: on a CRI-O node whose admin set
// cgroup_manager = "cgroupfs" (this machine is cgroup v1), a restart of
// crio.service would stop every pod of the node, each conmon being in
// the service's cgroup. An install that would change CRI-O's files is
// refused before anything changes, RestartStopsPods naming the admin's
// file: crio.service keeps its main process and /etc/crio stays byte for
// byte as it was. A re-run of a Shim installed before the admin's change,
// which changes nothing and restarts nothing, goes through.
func TestCRIOSystemdNodeCgroupfsRefused(t *testing.T) {
	ctx := context.Background()
	n := testutil.StartNode(t, testutil.NodeOptions{CRIO: true})
	crun, err := os.ReadFile(n.Local("/usr/bin/crun"))
	if err != nil {
		t.Fatal(err)
	}
	srv := testutil.StartFileServer(t)
	inst := &installer.Installer{HostRoot: n.Root}
	early := crunPlan(t, srv, "crun-early", crun)
	if _, err := inst.Install(ctx, early); err != nil {
		t.Fatalf("install before the admin's change: %v", err)
	}
	admin := filepath.Join(crioconfig.DefaultDropInDir, "20-admin.conf")
	if err := os.WriteFile(n.Local(admin), []byte("[crio.runtime]\ncgroup_manager = \"cgroupfs\"\nconmon_cgroup = \"pod\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := testutil.Tree(t, n.Local("/etc/crio"))
	pid := n.UnitProp(t, "crio", "MainPID")

	if res, err := inst.Install(ctx, early); err != nil || res.Changed || res.Restarted {
		t.Errorf("re-run of crun-early: %+v, %v; want nothing changed, nothing restarted", res, err)
	}
	_, err = inst.Install(ctx, crunPlan(t, srv, "crun-shimkit", crun))
	if installer.ReasonOf(err) != plan.ReasonRestartStopsPods || !strings.Contains(fmt.Sprint(err), admin) {
		t.Fatalf("install: %v (reason %s), want RestartStopsPods naming %s", err, installer.ReasonOf(err), admin)
	}
	t.Logf("refused: %v", err)
	if got := n.UnitProp(t, "crio", "MainPID"); got != pid {
		t.Errorf("crio.service restarted: main pid %s, then %s", pid, got)
	}
	assertSameTree(t, "a re-run and a refused install", before, testutil.Tree(t, n.Local("/etc/crio")))
}
