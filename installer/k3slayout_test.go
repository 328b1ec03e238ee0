package installer_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
)

// TestK3sFullTemplateIsNotEditable: a k3s template that replaces the
// distribution's config (no {{ template "base" . }}) is valid, so the
// refusal says ConfigNotEditable, not ConfigInvalid; it is permanent, and
// nothing on the node changes.
func TestK3sFullTemplateIsNotEditable(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "var/lib/rancher/k3s/agent/etc/containerd")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rendered := []byte("version = 3\n\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]\n  runtime_type = \"io.containerd.runc.v2\"\n")
	full := []byte("version = 3\n\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = \"{{ .NodeConfig.AgentConfig.PauseImage }}\"\n")
	for name, data := range map[string][]byte{"config.toml": rendered, "config-v3.toml.tmpl": full} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	inst := &installer.Installer{HostRoot: root, Restarter: installer.RestartFunc(func(context.Context) error {
		t.Error("containerd restarted for a refused install")
		return nil
	})}
	srv := testutil.StartFileServer(t)
	a := testutil.NewShimArchive(t, "demo", "/bin/true", nil)
	_, err := inst.Install(context.Background(), httpPlan(srv, "/demo.tar.gz", a))
	reason := installer.ReasonOf(err)
	if reason != plan.ReasonConfigNotEditable || !reason.Permanent() {
		t.Fatalf("install over a full custom template: %v (reason %q)", err, reason)
	}
	if errors.Is(err, installer.ErrRolledBack) || errors.Is(err, installer.ErrRollbackFailed) {
		t.Errorf("refused after changing the node: %v", err)
	}
	for name, want := range map[string][]byte{"config.toml": rendered, "config-v3.toml.tmpl": full} {
		if got, _ := os.ReadFile(filepath.Join(dir, name)); !bytes.Equal(got, want) {
			t.Errorf("%s changed:\n%s", name, got)
		}
	}
}

// TestK3sDropInDirRemoved: on current k3s the drop-in goes to
// config-v3.toml.d, which k3s imports but does not create. The directory
// shimkit created is recorded and removed by the uninstall that empties
// it; one that was there before stays.
func TestK3sDropInDirRemoved(t *testing.T) {
	for _, existed := range []bool{false, true} {
		root := t.TempDir()
		dir := filepath.Join(root, "var/lib/rancher/k3s/agent/etc/containerd")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		rendered := "version = 3\nimports = [\"/var/lib/rancher/k3s/agent/etc/containerd/config-v3.toml.d/*.toml\"]\n\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]\n  runtime_type = \"io.containerd.runc.v2\"\n"
		if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(rendered), 0o644); err != nil {
			t.Fatal(err)
		}
		if existed {
			if err := os.Mkdir(filepath.Join(dir, "config-v3.toml.d"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		inst := &installer.Installer{HostRoot: root, Offline: true}
		srv := testutil.StartFileServer(t)
		a := testutil.NewShimArchive(t, "demo", "/bin/true", nil)
		ctx := context.Background()
		if _, err := inst.Install(ctx, httpPlan(srv, "/demo.tar.gz", a)); err != nil {
			t.Fatalf("install: %v", err)
		}
		if !exists(filepath.Join(dir, "config-v3.toml.d/shimkit-demo.toml")) {
			t.Fatal("no drop-in")
		}
		if _, err := inst.Uninstall(ctx, uninstallPlan("demo")); err != nil {
			t.Fatalf("uninstall: %v", err)
		}
		if got := exists(filepath.Join(dir, "config-v3.toml.d")); got != existed {
			t.Errorf("the directory was there before: %v; after the uninstall: %v", existed, got)
		}
	}
}

// TestK3sDetectedShimNotLinked: k3s renders a runtime table of its own for
// a shim it knows (containerd-shim-spin-v2, ...) found on its PATH, so the
// installer does not link such a shim into /usr/local/bin on k3s (the
// handler's runtime_path finds it); other shims are linked as anywhere.
func TestK3sDetectedShimNotLinked(t *testing.T) {
	for name, linked := range map[string]bool{"spin": false, "demo": true} {
		root := t.TempDir()
		dir := filepath.Join(root, "var/lib/rancher/k3s/agent/etc/containerd")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		rendered := "version = 3\n\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]\n  runtime_type = \"io.containerd.runc.v2\"\n"
		if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(rendered), 0o644); err != nil {
			t.Fatal(err)
		}
		inst := &installer.Installer{HostRoot: root, Offline: true}
		srv := testutil.StartFileServer(t)
		a := testutil.NewShimArchive(t, name, "/bin/true", nil)
		if _, err := inst.Install(context.Background(), namedHTTPPlan(name, srv, "/"+name+".tar.gz", a)); err != nil {
			t.Fatalf("install %s: %v", name, err)
		}
		if got := exists(filepath.Join(root, "usr/local/bin/containerd-shim-"+name+"-v2")); got != linked {
			t.Errorf("%s: linked into /usr/local/bin: %v, want %v", name, got, linked)
		}
	}
}
