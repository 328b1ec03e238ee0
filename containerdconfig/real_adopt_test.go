package containerdconfig_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/internal/testutil"
)

// TestRealAdopt runs issue #14 on real containerd 1.7 and 2.2: a config
// with an admin's handler "demo" is refused by Install; Install with Adopt
// takes it over, and containerd (config dump and CRI) then runs shimkit's
// settings, without the admin's options merged in; Uninstall gives the
// file back byte for byte, and containerd runs the admin's handler again.
// The 2.2 config has CRLF line endings and no final newline.
func TestRealAdopt(t *testing.T) {
	for _, b := range testutil.ContainerdMatrix(t) {
		var config []byte
		switch b.Name {
		case "1.7":
			config = append(b.MinimalConfig(), "\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n  runtime_type = \"io.containerd.runc.v2\"\n\n"+
				"# the admin's demo handler\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.demo]\n  runtime_type = \"io.containerd.admin.v2\"\n"+
				"  runtime_path = \"/usr/local/bin/containerd-shim-admin-v2\"\n\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.demo.options]\n  AdminSetting = \"kept\"\n"...)
		case "2.2":
			config = append(b.MinimalConfig(), "\n# the admin's demo handler\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.demo]\n"+
				"  runtime_type = 'io.containerd.admin.v2'\n  runtime_path = '/usr/local/bin/containerd-shim-admin-v2'\n"+
				"[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.demo.options]\n  AdminSetting = 'kept'"...)
			config = bytes.ReplaceAll(config, []byte("\n"), []byte("\r\n"))
		default:
			continue
		}
		t.Run(b.Name, func(t *testing.T) { testRealAdopt(t, b, config) })
	}
}

func testRealAdopt(t *testing.T, b testutil.ContainerdBuild, original []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := testutil.StartContainerd(t, b, original)
	dumpBefore, stripped := mustDump(t, c), mustDump(t, c)
	deleteHandler(stripped, "demo")
	admin := criHandler(ctx, t, c, "demo")
	if admin["runtimeType"] != "io.containerd.admin.v2" {
		t.Fatalf("containerd does not run the admin's handler: %v\n%s", admin, c.LogTail())
	}

	h := containerdconfig.RuntimeHandler{
		Name:        "demo",
		RuntimeType: "io.containerd.demo.v2",
		RuntimePath: "/opt/shimkit/bin/containerd-shim-demo-v2",
		Options:     map[string]any{"ConfigPath": "/etc/demo/config.toml"},
	}
	target := containerdconfig.Target{Root: "/", Preset: containerdconfig.Preset{Name: containerdconfig.PresetContainerd, Config: c.ConfigPath}}
	if _, err := containerdconfig.NewInstall(target, h).Apply(ctx); !errors.Is(err, containerdconfig.ErrConflict) {
		t.Fatalf("install without Adopt: %v, want ErrConflict", err)
	}
	if got := mustRead(t, c.ConfigPath); !bytes.Equal(got, original) {
		t.Fatal("the refused install changed the config")
	}

	change, err := (&containerdconfig.Install{Target: target, Handler: h, Adopt: true}).Apply(ctx)
	if err != nil || !change.Changed() {
		t.Fatalf("adopt: %v", err)
	}
	if err := change.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	ours := criHandler(ctx, t, c, "demo")
	if ours["runtimeType"] != h.RuntimeType || ours["runtimePath"] != h.RuntimePath {
		t.Errorf("CRI runs demo as %v, want shimkit's settings", ours)
	}
	if opts, _ := ours["options"].(map[string]any); opts["ConfigPath"] != "/etc/demo/config.toml" || opts["AdminSetting"] != nil {
		t.Errorf("CRI reports demo.options = %v, want shimkit's alone", ours["options"])
	}
	dumpAdopted := mustDump(t, c)
	if d, _ := runtimesOf(dumpAdopted)["demo"].(map[string]any); d["runtime_type"] != h.RuntimeType || d["runtime_path"] != h.RuntimePath {
		t.Errorf("config dump shows demo = %v", d)
	}
	deleteHandler(dumpAdopted, "demo")
	if diff := cmp.Diff(stripped, dumpAdopted); diff != "" {
		t.Errorf("config dump changed beyond the handler (-before +after):\n%s", diff)
	}
	if text := mustRead(t, c.ConfigPath); !bytes.Contains(text, []byte("#| ")) || !strings.Contains(string(text), "adopted by shimkit") {
		t.Errorf("adopted config does not keep the admin's text:\n%s", text)
	}

	change, err = containerdconfig.NewUninstall(target, "demo").Apply(ctx)
	if err != nil || !change.Changed() {
		t.Fatalf("uninstall: %v", err)
	}
	if err := change.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, c.ConfigPath); !bytes.Equal(got, original) {
		t.Errorf("config after uninstall differs from the original:\n%s", cmp.Diff(string(original), string(got)))
	}
	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(admin, criHandler(ctx, t, c, "demo")); diff != "" {
		t.Errorf("CRI does not run the admin's handler again (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(dumpBefore, mustDump(t, c)); diff != "" {
		t.Errorf("config dump after uninstall differs (-before +after):\n%s", diff)
	}
}

// criHandler returns a runtime handler as CRI's verbose status reports it.
func criHandler(ctx context.Context, t *testing.T, c *testutil.Containerd, name string) map[string]any {
	t.Helper()
	cfg, _, err := c.CRIConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	runtimes, _ := cfg["containerd"].(map[string]any)["runtimes"].(map[string]any)
	h, _ := runtimes[name].(map[string]any)
	return h
}
