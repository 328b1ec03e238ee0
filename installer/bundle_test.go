package installer_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/installertest"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
)

// fakeNode is a root filesystem with a containerd config, a counting
// restarter, a health checker that can be told to fail, and fake units:
// the installer's logic without a containerd.
type fakeNode struct {
	root      string
	config    string // local path of config.toml
	original  []byte
	restarts  atomic.Int32
	unhealthy atomic.Bool
	units     *installertest.FakeUnits
}

func newFakeNode(t *testing.T, config string) *fakeNode {
	t.Helper()
	n := &fakeNode{root: t.TempDir(), original: []byte(config), units: &installertest.FakeUnits{}}
	n.config = filepath.Join(n.root, "etc/containerd/config.toml")
	if err := os.MkdirAll(filepath.Dir(n.config), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(n.config, n.original, 0o644); err != nil {
		t.Fatal(err)
	}
	return n
}

func (n *fakeNode) installer() *installer.Installer {
	preset, _ := containerdconfig.PresetNamed(containerdconfig.PresetContainerd)
	return &installer.Installer{
		HostRoot: n.root, Preset: &preset, Units: n.units,
		CanarySettle: -1, // no kubelet to reconnect (TestCanarySettle waits)
		Restarter:    installer.RestartFunc(func(context.Context) error { n.restarts.Add(1); return nil }),
		Health: installer.HealthFunc(func(_ context.Context, h string, present bool) error {
			if n.unhealthy.Load() && h != "" { // the install's check fails, the rollback's passes
				return installer.ErrUnhealthy
			}
			return nil
		}),
	}
}

func (n *fakeNode) local(p string) string { return filepath.Join(n.root, p) }

// gvisorLikePlan is a bundle of two programs and a config file that names
// one of them through the bundle placeholder, as gVisor's runsc.toml does.
func gvisorLikePlan(t *testing.T, srv *testutil.FileServer, version string) *plan.NodePlan {
	a := testutil.NewArchive(t,
		testutil.ArchiveFile{Name: "bin/runsc", Mode: 0o755, Data: []byte("runsc " + version)},
		testutil.ArchiveFile{Name: "bin/containerd-shim-runsc-v1", Mode: 0o755, Data: []byte("shim " + version)},
		testutil.ArchiveFile{Name: "etc/runsc.toml", Mode: 0o644, Data: []byte("binary_name = \"$(BUNDLE_DIR)/runsc\"\n[runsc_config]\n  platform = \"systrap\"\n")},
	)
	p := plan.New(plan.ShimRef{Name: "gvisor", UID: "uid-g"}, plan.OpInstall)
	p.Artifact = &plan.Artifact{Type: plan.SourceHTTP, URL: srv.Add("/gvisor-"+version+".tar.gz", a.Data), Digest: "sha256:" + a.SHA256}
	p.Files = []plan.File{
		{Source: "runsc", Path: "runsc", Mode: 0o755},
		{Source: "containerd-shim-runsc-v1", Path: "containerd-shim-runsc-v1", Mode: 0o755},
		{Source: "etc/runsc.toml", Path: "runsc.toml", Mode: 0o644, Substitute: true},
	}
	p.Handlers = []plan.Handler{{Name: "runsc", RuntimeType: "io.containerd.runsc.v1", RuntimePath: "$(BUNDLE_DIR)/containerd-shim-runsc-v1",
		Options: map[string]any{"TypeUrl": "io.containerd.runsc.v1.options", "ConfigPath": "$(BUNDLE_DIR)/runsc.toml"}}}
	return rehash(p)
}

// TestBundleLifecycle: a multi-file bundle is laid out in a version
// directory behind the "current" link, with modes and substitution; an
// upgrade switches the link without touching the config (no restart) and
// removes the old version; a failed upgrade switches back; uninstall
// leaves the config byte for byte and nothing of the bundle.
func TestBundleLifecycle(t *testing.T) {
	ctx := context.Background()
	n := newFakeNode(t, "version = 2\n")
	inst := n.installer()
	srv := testutil.StartFileServer(t)
	v1 := gvisorLikePlan(t, srv, "v1")

	res, err := inst.Install(ctx, v1)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Changed || !res.Restarted || len(res.Files) != 3 {
		t.Errorf("install: %+v", res)
	}
	current := "/opt/shimkit/gvisor/current"
	toml, err := os.ReadFile(n.local(current + "/runsc.toml"))
	if err != nil || !strings.Contains(string(toml), `binary_name = "/opt/shimkit/gvisor/current/runsc"`) {
		t.Errorf("runsc.toml not substituted: %s %v", toml, err)
	}
	for file, mode := range map[string]os.FileMode{"runsc": 0o755, "containerd-shim-runsc-v1": 0o755, "runsc.toml": 0o644} {
		if fi, err := os.Stat(n.local(current + "/" + file)); err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: %v %v, want mode %v", file, fi.Mode(), err, mode)
		}
	}
	cfg, _ := os.ReadFile(n.config)
	for _, want := range []string{`runtime_path = "/opt/shimkit/gvisor/current/containerd-shim-runsc-v1"`, `ConfigPath = "/opt/shimkit/gvisor/current/runsc.toml"`} {
		if !bytes.Contains(cfg, []byte(want)) {
			t.Errorf("config lacks %s:\n%s", want, cfg)
		}
	}
	v1dir, _ := os.Readlink(n.local(current))

	// Upgrade: a new artifact, same handler: the link switches, the config
	// stays, containerd is not restarted, the old version goes.
	v2 := gvisorLikePlan(t, srv, "v2")
	res, err = inst.Install(ctx, v2)
	if err != nil || res.Changed || res.Restarted || !res.Upgrade || n.restarts.Load() != 1 {
		t.Fatalf("upgrade: %+v %v, %d restarts", res, err, n.restarts.Load())
	}
	if got, _ := os.ReadFile(n.local(current + "/runsc")); string(got) != "runsc v2" {
		t.Errorf("current runsc is %q", got)
	}
	if _, err := os.Stat(n.local("/opt/shimkit/gvisor/" + v1dir)); !os.IsNotExist(err) {
		t.Errorf("old version %s left: %v", v1dir, err)
	}

	// A failed upgrade (changed options, containerd unhealthy) switches back.
	v2dir, _ := os.Readlink(n.local(current))
	v3 := gvisorLikePlan(t, srv, "v3")
	v3.Handlers[0].Options["Debug"] = true
	n.unhealthy.Store(true)
	_, err = inst.Install(ctx, rehash(v3))
	n.unhealthy.Store(false)
	if !errors.Is(err, installer.ErrRolledBack) {
		t.Fatalf("failed upgrade: %v", err)
	}
	if cur, _ := os.Readlink(n.local(current)); cur != v2dir {
		t.Errorf("current is %s after rollback, want %s", cur, v2dir)
	}
	if got, _ := os.ReadFile(n.config); !bytes.Equal(got, cfg) {
		t.Errorf("config after rollback:\n%s", got)
	}
	if entries, _ := os.ReadDir(n.local("/opt/shimkit/gvisor")); len(entries) != 2 {
		t.Errorf("bundle directory after rollback: %v", entries)
	}

	if _, err := inst.Uninstall(ctx, uninstallPlan("gvisor")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(n.config); !bytes.Equal(got, n.original) {
		t.Errorf("config after uninstall:\n%s", got)
	}
	if exists(n.local("/opt/shimkit")) {
		t.Error("/opt/shimkit left after uninstall")
	}
}

// TestBundleRefusals: a file the artifact lacks fails before the node is
// touched, with the reason ArtifactInvalid; a digest that does not match is
// DigestMismatch; the handler runc is refused.
func TestBundleRefusals(t *testing.T) {
	ctx := context.Background()
	srv := testutil.StartFileServer(t)
	for _, tc := range []struct {
		name   string
		edit   func(*plan.NodePlan)
		reason plan.Reason
	}{
		{"missing file", func(p *plan.NodePlan) { p.Files[0].Source = "nonexistent" }, plan.ReasonArtifactInvalid},
		{"ambiguous pattern", func(p *plan.NodePlan) { p.Files[0].Source = "*"; p.Files[0].Path = "x" }, plan.ReasonArtifactInvalid},
		{"digest mismatch", func(p *plan.NodePlan) { p.Artifact.Digest = "sha256:" + strings.Repeat("0", 64) }, plan.ReasonDigestMismatch},
		{"not found", func(p *plan.NodePlan) { p.Artifact.URL += ".missing" }, plan.ReasonFetchFailed},
		{"no file under a directory", func(p *plan.NodePlan) { p.Files[0] = plan.File{Source: "lib/", Path: "lib/", Mode: 0o755} }, plan.ReasonArtifactInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newFakeNode(t, "version = 2\n")
			p := gvisorLikePlan(t, srv, "v1")
			tc.edit(p)
			res, err := n.installer().Install(ctx, rehash(p))
			r := installer.Report(p, res, err)
			if r.Outcome != plan.Failed || r.Reason != tc.reason {
				t.Errorf("result %+v, want Failed/%s", r, tc.reason)
			}
			if got, _ := os.ReadFile(n.config); !bytes.Equal(got, n.original) || n.restarts.Load() != 0 {
				t.Errorf("node touched: %d restarts, config:\n%s", n.restarts.Load(), got)
			}
			if exists(n.local("/opt/shimkit/gvisor/current")) {
				t.Error("a bundle was placed")
			}
		})
	}
}
