package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/installer/cli"
	"github.com/shimkit/shimkit/internal/testutil"
)

func run(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Run(context.Background(), args, func(k string) string { return env[k] }, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestOfflineInstallIntoRootfs installs from a local artifact into a root
// filesystem, as an image build does, with flags and with the environment
// a Job would set; then uninstalls.
func TestOfflineInstallIntoRootfs(t *testing.T) {
	root := t.TempDir()
	cfg := filepath.Join(root, "etc/containerd/config.toml")
	orig := []byte("version = 2\n")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	a := testutil.NewShimArchive(t, "demo", "/usr/bin/containerd-shim-runc-v2", nil)
	art := filepath.Join(t.TempDir(), "demo.tar.gz")
	if err := os.WriteFile(art, a.Data, 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"SHIMKIT_HOST_ROOT": root, "SHIMKIT_OFFLINE": "true", "SHIMKIT_SHIM_NAME": "demo",
		"SHIMKIT_FETCH_TYPE": "local", "SHIMKIT_LOCATION": art, "SHIMKIT_SHA256": a.SHA256,
		"SHIMKIT_OPTIONS": `{"ConfigPath":"/etc/demo.toml","Threads":4}`,
	}
	code, out, errOut := run(t, env, "install", "--log-format", "text")
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	if !strings.Contains(out, "✓ placed") || !strings.Contains(out, "install demo: done") {
		t.Errorf("progress output:\n%s", out)
	}
	data, _ := os.ReadFile(cfg)
	c, err := containerdconfig.Parse(cfg, data)
	if err != nil || !c.HasHandler("demo") {
		t.Fatalf("handler not registered: %v\n%s", err, data)
	}
	h := c.Handler("demo")
	if h["runtime_path"] != "/opt/shimkit/bin/containerd-shim-demo-v2" || h["options"].(map[string]any)["Threads"] != int64(4) {
		t.Errorf("handler = %v", h)
	}
	if fi, err := os.Stat(filepath.Join(root, "opt/shimkit/bin/containerd-shim-demo-v2")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("binary: %v %v", fi, err)
	}

	code, out, _ = run(t, env, "status")
	var st []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || len(st) != 1 || st[0]["Problems"] != nil {
		t.Errorf("status exit %d: %s", code, out)
	}

	code, out, errOut = run(t, env, "uninstall", "--log-format", "json")
	if code != cli.ExitOK || !strings.Contains(out, `"msg":"removed"`) {
		t.Fatalf("uninstall exit %d: %s %s", code, out, errOut)
	}
	if data, _ := os.ReadFile(cfg); !bytes.Equal(data, orig) {
		t.Errorf("config after uninstall: %q", data)
	}
}

func TestExitCodes(t *testing.T) {
	if code, _, _ := run(t, nil); code != cli.ExitUsage {
		t.Errorf("no command: %d", code)
	}
	if code, _, _ := run(t, nil, "install"); code != cli.ExitUsage {
		t.Errorf("install without --name: %d", code)
	}
	if code, _, _ := run(t, nil, "install", "--name", "demo", "--fetch-type", "ftp"); code != cli.ExitUsage {
		t.Errorf("bad fetch type: %d", code)
	}
	root := t.TempDir()
	code, _, errOut := run(t, nil, "install", "--host-root", root, "--offline", "--name", "demo", "--fetch-type", "local", "--location", filepath.Join(root, "missing.tar.gz"))
	if code != cli.ExitFailed || !strings.Contains(errOut, "node unchanged") {
		t.Errorf("missing artifact: exit %d: %s", code, errOut)
	}
}
