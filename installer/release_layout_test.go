package installer_test

import (
	"context"
	"os"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
)

// gvisorReleasePlan installs gVisor as it is released since 2026-08: one
// gvisor.tar.zstd holding runsc, containerd-shim-runsc-v1 and the
// directory gvisor-bin/ of runsc's sidecars; runsc.toml is not in it, so
// the plan writes it (Content).
func gvisorReleasePlan(t *testing.T, srv *testutil.FileServer, version, config string) *plan.NodePlan {
	a := testutil.NewArchive(t,
		testutil.ArchiveFile{Name: "runsc", Mode: 0o755, Data: []byte("runsc " + version)},
		testutil.ArchiveFile{Name: "containerd-shim-runsc-v1", Mode: 0o755, Data: []byte("shim " + version)},
		testutil.ArchiveFile{Name: "gvisor-bin/gvisor_sentry", Mode: 0o755, Data: []byte("sentry " + version)},
		testutil.ArchiveFile{Name: "gvisor-bin/runsc-metric-server", Mode: 0o755, Data: []byte("metrics " + version)},
		testutil.ArchiveFile{Name: "gvisor-bin/checkpointgofer", Mode: 0o755, Data: []byte("gofer " + version)},
	).Zstd(t)
	p := plan.New(plan.ShimRef{Name: "gvisor", UID: "uid-g"}, plan.OpInstall)
	p.Artifact = &plan.Artifact{Type: plan.SourceHTTP, URL: srv.Add("/gvisor/releases/release/"+version+"/x86_64/gvisor.tar.zstd", a.Data), Digest: "sha256:" + a.SHA256}
	p.Files = []plan.File{
		{Source: "runsc", Path: "runsc", Mode: 0o755},
		{Source: "containerd-shim-runsc-v1", Path: "containerd-shim-runsc-v1", Mode: 0o755},
		{Source: "gvisor-bin/", Path: "gvisor-bin/", Mode: 0o755},
		{Path: "runsc.toml", Mode: 0o644, Substitute: true, Content: &config},
	}
	p.Handlers = []plan.Handler{{Name: "runsc", RuntimeType: "io.containerd.runsc.v1",
		Options: map[string]any{"TypeUrl": "io.containerd.runsc.v1.options", "ConfigPath": "$(BUNDLE_DIR)/runsc.toml"}}}
	return rehash(p)
}

// TestBundleOfARelease: gVisor's release tarball (zstd) is laid out with
// its directory of sidecars, each file with the directory's mode, and a
// runsc.toml the plan writes, substituted. A sidecar changed on the node
// is drift. A new runsc.toml alone is an upgrade that restarts nothing.
// Uninstall leaves nothing.
func TestBundleOfARelease(t *testing.T) {
	ctx := context.Background()
	n := newFakeNode(t, "version = 2\n")
	inst := n.installer()
	srv := testutil.StartFileServer(t)
	const toml = "binary_name = \"$(BUNDLE_DIR)/runsc\"\n"
	p := gvisorReleasePlan(t, srv, "20261005.0", toml)

	res, err := inst.Install(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	current := "/opt/shimkit/gvisor/current"
	version, _ := os.Readlink(n.local(current))
	var want []string
	for _, f := range []string{"runsc", "containerd-shim-runsc-v1", "gvisor-bin/checkpointgofer", "gvisor-bin/gvisor_sentry", "gvisor-bin/runsc-metric-server", "runsc.toml"} {
		want = append(want, path.Join("/opt/shimkit/gvisor", version, f))
	}
	if !slices.Equal(res.Files, want) {
		t.Errorf("files = %v, want %v", res.Files, want)
	}
	for file, mode := range map[string]os.FileMode{"gvisor-bin/gvisor_sentry": 0o755, "gvisor-bin/checkpointgofer": 0o755, "runsc.toml": 0o644} {
		if fi, err := os.Stat(n.local(current + "/" + file)); err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: %v %v, want mode %v", file, fi, err, mode)
		}
	}
	if got, _ := os.ReadFile(n.local(current + "/gvisor-bin/gvisor_sentry")); string(got) != "sentry 20261005.0" {
		t.Errorf("gvisor_sentry = %q", got)
	}
	if got, _ := os.ReadFile(n.local(current + "/runsc.toml")); string(got) != "binary_name = \"/opt/shimkit/gvisor/current/runsc\"\n" {
		t.Errorf("runsc.toml = %q", got)
	}

	// A sidecar changed on the node is drift, named.
	sentry := n.local(current + "/gvisor-bin/gvisor_sentry")
	if err := os.WriteFile(sentry, []byte("not gVisor's"), 0o755); err != nil {
		t.Fatal(err)
	}
	vr, err := inst.Verify(ctx, verifyOf(p))
	if err != nil || len(vr.Drift) != 1 || !strings.Contains(vr.Drift[0], "gvisor-bin/gvisor_sentry was changed") {
		t.Errorf("verify after a sidecar changed: %v %v", vr.Drift, err)
	}
	if _, err := inst.Install(ctx, p); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(sentry); string(got) != "sentry 20261005.0" {
		t.Errorf("gvisor_sentry after the repair = %q", got)
	}

	// Only runsc.toml changes: a new version directory, no restart.
	restarts := n.restarts.Load()
	p2 := gvisorReleasePlan(t, srv, "20261005.0", toml+"[runsc_config]\n  platform = \"systrap\"\n")
	if res, err := inst.Install(ctx, p2); err != nil || !res.Upgrade || res.Restarted || n.restarts.Load() != restarts {
		t.Fatalf("new runsc.toml: %+v %v", res, err)
	}
	if got, _ := os.ReadFile(n.local(current + "/runsc.toml")); !strings.Contains(string(got), "systrap") {
		t.Errorf("runsc.toml after the upgrade = %q", got)
	}

	if _, err := inst.Uninstall(ctx, uninstallPlan("gvisor")); err != nil {
		t.Fatal(err)
	}
	if exists(n.local("/opt/shimkit")) {
		t.Error("/opt/shimkit left after uninstall")
	}
}
