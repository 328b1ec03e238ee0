package installer_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/internal/testutil/sandboxer"
)

// TestSandboxerOnSystemdNode installs a sandboxer Shim on a node whose
// containerd 2.2 runs under systemd: the daemon (a real gRPC server of
// containerd's sandbox Controller service) runs as a systemd unit from the
// bundle, containerd loads its proxy plugin and the handler's sandboxer and
// io_type, and uninstall stops and removes the unit and leaves the config
// byte for byte as it was.
func TestSandboxerOnSystemdNode(t *testing.T) {
	ctx := context.Background()
	nc := nodeCases(t)[1]
	n, orig := bootNode(t, nc)
	t.Setenv("CGO_ENABLED", "0") // the node's root filesystem is not the host's
	bin := sandboxer.Build(t)
	srv := testutil.StartFileServer(t)
	const calls = "/var/lib/fake-sandboxer/calls.jsonl"
	if err := os.MkdirAll(n.Local("/var/lib/fake-sandboxer"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := sandboxerPlan(t, srv, "vmm", bin, "-socket", "/run/shimkit/vmm.sock", "-calls", calls)
	inst := &installer.Installer{HostRoot: n.Root}
	res, err := inst.Install(ctx, p)
	if err != nil {
		t.Fatalf("install: %v\n%s\n%s", err, n.Journal("shimkit-vmm"), n.Journal("containerd"))
	}
	if !res.Restarted {
		t.Errorf("containerd not restarted: %+v", res)
	}
	if out, _ := n.Exec(ctx, "systemctl", "is-active", "shimkit-vmm.service"); strings.TrimSpace(string(out)) != "active" {
		t.Fatalf("unit is %s\n%s", out, n.Journal("shimkit-vmm"))
	}
	if out, _ := n.Exec(ctx, "systemctl", "is-enabled", "shimkit-vmm.service"); strings.TrimSpace(string(out)) != "enabled" {
		t.Errorf("unit is %s", out)
	}
	dump, err := n.Exec(ctx, "containerd", "config", "dump")
	if err != nil {
		t.Fatalf("config dump: %v\n%s", err, dump)
	}
	for _, want := range []string{"[proxy_plugins.vmm]", `type = 'sandbox'`, `address = '/run/shimkit/vmm.sock'`, `sandboxer = 'vmm'`, `io_type = 'streaming'`} {
		if !bytes.Contains(dump, []byte(want)) {
			t.Errorf("config dump lacks %s:\n%s", want, dump)
		}
	}
	ctr := nc.build.Binary("ctr")
	out, err := exec.CommandContext(ctx, ctr, "--address", n.Socket(), "plugins", "ls").CombinedOutput()
	if err != nil {
		t.Fatalf("ctr plugins ls: %v\n%s", err, out)
	}
	if !hasPluginLine(out, "io.containerd.sandbox.controller.v1", "vmm", "ok") {
		t.Errorf("the proxy sandbox plugin is not loaded:\n%s", out)
	}
	// containerd hands pods of the handler to the daemon.
	rt := runtimeClient(t, n.Socket())
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	_, _, _ = testutil.RunSandbox(cctx, rt, "vmm", "pod-vmm")
	cancel()
	if data, _ := os.ReadFile(n.Local(calls)); !bytes.Contains(data, []byte(`"method":"Create"`)) {
		t.Errorf("the sandboxer got no Create for the pod; calls:\n%s", data)
	}
	removeSandboxes(ctx, t, rt)

	if _, err := inst.Uninstall(ctx, uninstallPlan("vmm")); err != nil {
		t.Fatalf("uninstall: %v", err)
	}
	if out, _ := n.Exec(ctx, "systemctl", "is-active", "shimkit-vmm.service"); strings.TrimSpace(string(out)) == "active" {
		t.Error("unit still active after uninstall")
	}
	if got, _ := os.ReadFile(n.Local("/etc/containerd/config.toml")); !bytes.Equal(got, orig) {
		t.Errorf("config after uninstall:\n%s", got)
	}
	if left, _ := os.ReadDir(n.Local("/etc/containerd/conf.d")); len(left) > 0 {
		t.Errorf("drop-ins left: %v", left)
	}
	assertClean(t, n)
}

// hasPluginLine reports whether `ctr plugins ls` lists type/id with status.
func hasPluginLine(out []byte, typ, id, status string) bool {
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 4 && f[0] == typ && f[1] == id && f[len(f)-1] == status {
			return true
		}
	}
	return false
}
