package installer_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
)

// sandboxerPlan is a Shim with a sandboxer daemon from its bundle and a
// handler whose pods it serves.
func sandboxerPlan(t *testing.T, srv *testutil.FileServer, name, daemon string, args ...string) *plan.NodePlan {
	t.Helper()
	data, err := os.ReadFile(daemon)
	if err != nil {
		t.Fatal(err)
	}
	a := testutil.NewArchive(t, testutil.ArchiveFile{Name: "fake-sandboxer", Mode: 0o755, Data: data})
	p := plan.New(plan.ShimRef{Name: name, UID: "uid-" + name}, plan.OpInstall)
	p.Artifact = &plan.Artifact{Type: plan.SourceHTTP, URL: srv.Add("/"+name+".tar.gz", a.Data), Digest: "sha256:" + a.SHA256}
	p.Files = []plan.File{{Source: "fake-sandboxer", Path: "fake-sandboxer", Mode: 0o755}}
	sock := "/run/shimkit/" + name + ".sock"
	p.Sandboxers = []plan.Sandboxer{{Name: name, Unit: "shimkit-" + name + ".service", Address: sock,
		Command: append([]string{"$(BUNDLE_DIR)/fake-sandboxer"}, args...)}}
	// The runtime type is the VM shim a Kuasar-style sandboxer pairs with;
	// pods here only need the sandbox, which the daemon serves.
	p.Handlers = []plan.Handler{{Name: name, RuntimeType: "io.containerd." + name + ".v1", Sandboxer: name, IOType: "streaming"}}
	return rehash(p)
}

// TestSandboxerUnitsWithFakes: the unit file is written with the resolved
// command, enabled, started before containerd restarts; the proxy plugin
// and the handler's sandboxer are registered; uninstall stops and removes
// all of it and leaves the config byte for byte.
func TestSandboxerUnitsWithFakes(t *testing.T) {
	ctx := context.Background()
	n := newFakeNode(t, "version = 3\n")
	inst := n.installer()
	srv := testutil.StartFileServer(t)
	p := sandboxerPlan(t, srv, "vmm", "/bin/true", "--address", "/run/shimkit/vmm.sock")
	// The fake units run nothing: serve the daemon's socket here.
	if err := os.MkdirAll(n.local("/run/shimkit"), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", n.local("/run/shimkit/vmm.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	if _, err := inst.Install(ctx, p); err != nil {
		t.Fatal(err)
	}
	unit, err := os.ReadFile(n.local("/etc/systemd/system/shimkit-vmm.service"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`ExecStart="/opt/shimkit/vmm/current/fake-sandboxer" "--address" "/run/shimkit/vmm.sock"`, "Before=containerd.service", "WantedBy=multi-user.target"} {
		if !strings.Contains(string(unit), want) {
			t.Errorf("unit lacks %s:\n%s", want, unit)
		}
	}
	if target, err := os.Readlink(n.local("/etc/systemd/system/multi-user.target.wants/shimkit-vmm.service")); err != nil || target != "../shimkit-vmm.service" {
		t.Errorf("not enabled: %q %v", target, err)
	}
	if !n.units.Running("shimkit-vmm.service") {
		t.Error("unit not started")
	}
	cfg, _ := os.ReadFile(n.config)
	for _, want := range []string{`[proxy_plugins.vmm]`, `address = "/run/shimkit/vmm.sock"`, `sandboxer = "vmm"`, `io_type = "streaming"`} {
		if !bytes.Contains(cfg, []byte(want)) {
			t.Errorf("config lacks %s:\n%s", want, cfg)
		}
	}
	// The same plan again: nothing restarted, the unit not restarted either.
	if res, err := inst.Install(ctx, p); err != nil || res.Restarted {
		t.Errorf("re-run: %+v %v", res, err)
	}
	if _, err := inst.Uninstall(ctx, uninstallPlan("vmm")); err != nil {
		t.Fatal(err)
	}
	if n.units.Running("shimkit-vmm.service") {
		t.Error("unit still running")
	}
	for _, p := range []string{"/etc/systemd/system/shimkit-vmm.service", "/etc/systemd/system/multi-user.target.wants/shimkit-vmm.service", "/opt/shimkit"} {
		if exists(n.local(p)) {
			t.Errorf("%s left", p)
		}
	}
	if got, _ := os.ReadFile(n.config); !bytes.Equal(got, n.original) {
		t.Errorf("config after uninstall:\n%s", got)
	}
}
