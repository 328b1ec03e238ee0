package installer_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/internal/testutil"
)

// TestK3sStyleNode: on a node laid out as k3s (containerd in the
// k3s-agent unit, its config rendered at each start from
// config-v3.toml.tmpl, the socket under /run/k3s), the installer detects
// the layout, writes a template that keeps {{ template "base" . }},
// restarts k3s-agent (the unit, not containerd.service) and checks CRI on
// k3s's socket; a sandbox runs with the handler from the rendered config;
// the uninstall, in one run, leaves the rendered config byte for byte as
// it was and no template behind.
func TestK3sStyleNode(t *testing.T) {
	b := testutil.ContainerdMatrix(t)[2]
	ctx := context.Background()
	n := testutil.StartNode(t, testutil.NodeOptions{Containerd: &b, K3s: true})
	testutil.ImportPause(t, "/usr/bin/ctr", n.Socket())
	rendered := n.Local(testutil.K3sConfigDir + "/config.toml")
	tmpl := n.Local(testutil.K3sConfigDir + "/config-v3.toml.tmpl")
	orig, err := os.ReadFile(rendered)
	if err != nil {
		t.Fatal(err)
	}
	inst := &installer.Installer{HostRoot: n.Root} // every default: the layout detected
	srv := testutil.StartFileServer(t)
	a := testutil.NewShimArchive(t, "demo", b.Binary("containerd-shim-runc-v2"), nil)
	starts := n.ContainerdStarts(t)

	res, err := inst.Install(ctx, httpPlan(srv, "/demo.tar.gz", a))
	if err != nil {
		t.Fatalf("install: %v\n%s", err, n.Journal(testutil.K3sUnit))
	}
	if got := n.ContainerdStarts(t); !res.Restarted || got != starts+1 {
		t.Errorf("install: restarted %v, %s started %d times (was %d), want one restart", res.Restarted, testutil.K3sUnit, got, starts)
	}
	data, err := os.ReadFile(tmpl)
	if err != nil || !bytes.Contains(data, []byte("{{ template \"base\" . }}\n")) || !bytes.Contains(data, []byte("demo")) {
		t.Errorf("the template %s: %v\n%s", tmpl, err, data)
	}
	if cfg, _ := os.ReadFile(rendered); !bytes.Contains(cfg, []byte("demo")) || !bytes.Contains(cfg, []byte(testutil.K3sSocket)) {
		t.Errorf("the rendered config lacks the handler or the base:\n%s", cfg)
	}
	rt := runtimeClient(t, n.Socket())
	_, exe, err := testutil.RunSandbox(ctx, rt, "demo", "k3s")
	if err != nil {
		t.Fatalf("%v\n%s", err, n.Journal(testutil.K3sUnit))
	}
	if !strings.HasPrefix(exe, "/opt/shimkit/demo/") {
		t.Errorf("the sandbox runs %s", exe)
	}
	removeSandboxes(ctx, t, rt)

	starts = n.ContainerdStarts(t)
	if res, err := inst.Uninstall(ctx, uninstallPlan("demo")); err != nil || !res.Restarted {
		t.Fatalf("uninstall: %+v %v\n%s", res, err, n.Journal(testutil.K3sUnit))
	}
	if got := n.ContainerdStarts(t); got != starts+1 {
		t.Errorf("uninstall: %s started %d times (was %d), want one restart", testutil.K3sUnit, got, starts)
	}
	if _, err := os.Stat(tmpl); !os.IsNotExist(err) {
		t.Errorf("the template shimkit created is left: %v", err)
	}
	if cfg, _ := os.ReadFile(rendered); !bytes.Equal(cfg, orig) {
		t.Errorf("the rendered config after the uninstall:\n%s\nwant\n%s", cfg, orig)
	}
	if _, err := os.Stat(n.Local("/opt/shimkit")); !os.IsNotExist(err) {
		t.Errorf("/opt/shimkit left: %v", err)
	}
}
