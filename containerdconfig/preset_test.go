package containerdconfig_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/shimkit/shimkit/containerdconfig"
)

const (
	k3sDir  = "/var/lib/rancher/k3s/agent/etc/containerd"
	rke2Dir = "/var/lib/rancher/rke2/agent/etc/containerd"
)

// TestPresets installs and uninstalls the spin handler on the layout of
// each distribution, checks the file shimkit wrote against a golden file,
// and checks that uninstall leaves the node as it was.
func TestPresets(t *testing.T) {
	tests := []struct {
		name    string
		preset  string
		mode    containerdconfig.Mode
		files   map[string]string
		written string // the node file the install writes
		units   []string
	}{
		{
			name: "containerd-no-config", preset: "containerd",
			files:   map[string]string{"/etc/hostname": "node\n"},
			written: "/etc/containerd/config.toml", units: []string{"containerd"},
		},
		{
			name: "containerd-v3-conf.d", preset: "containerd",
			files:   map[string]string{"/etc/containerd/config.toml": "version = 3\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n"},
			written: "/etc/containerd/conf.d/shimkit-spin.toml", units: []string{"containerd"},
		},
		{
			name: "containerd-v3-relative-import", preset: "containerd",
			files:   map[string]string{"/etc/containerd/config.toml": "version = 3\nimports = [\"extra/*.toml\"]\n"},
			written: "/etc/containerd/extra/shimkit-spin.toml", units: []string{"containerd"},
		},
		{
			name: "containerd-v3-modefile", preset: "containerd", mode: containerdconfig.ModeFile,
			files:   map[string]string{"/etc/containerd/config.toml": "version = 3\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n"},
			written: "/etc/containerd/config.toml", units: []string{"containerd"},
		},
		{
			name: "k3s-new-template", preset: "k3s",
			files:   map[string]string{k3sDir + "/config.toml": "# rendered by k3s\nversion = 2\n"},
			written: k3sDir + "/config.toml.tmpl", units: []string{"k3s", "k3s-agent"},
		},
		{
			name: "k3s-existing-template", preset: "k3s",
			files: map[string]string{
				k3sDir + "/config.toml": "version = 2\n",
				k3sDir + "/config.toml.tmpl": "{{ template \"base\" . }}\n\n# the user's mirror\n" +
					"[plugins.\"io.containerd.grpc.v1.cri\".registry.mirrors.\"docker.io\"]\n  endpoint = [\"https://mirror.example\"]\n",
			},
			written: k3sDir + "/config.toml.tmpl", units: []string{"k3s", "k3s-agent"},
		},
		{
			name: "k3s-v3-drop-in", preset: "k3s",
			files: map[string]string{
				k3sDir + "/config.toml": "version = 3\nimports = [\"" + k3sDir + "/config-v3.toml.d/*.toml\"]\n",
			},
			written: k3sDir + "/config-v3.toml.d/shimkit-spin.toml", units: []string{"k3s", "k3s-agent"},
		},
		{
			name: "rke2-v3-template", preset: "rke2",
			files:   map[string]string{rke2Dir + "/config.toml": "version = 3\n"},
			written: rke2Dir + "/config-v3.toml.tmpl", units: []string{"rke2-server", "rke2-agent"},
		},
		{
			name: "microk8s", preset: "microk8s",
			files: map[string]string{"/var/snap/microk8s/current/args/containerd-template.toml": "version = 2\n" +
				"[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n  snapshotter = \"${SNAPSHOTTER}\"\n" +
				"[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n  runtime_type = \"io.containerd.runc.v2\"\n"},
			written: "/var/snap/microk8s/current/args/containerd-template.toml", units: []string{"snap.microk8s.daemon-containerd"},
		},
		{
			name: "k0s", preset: "k0s",
			files:   map[string]string{"/etc/k0s/containerd.d/.keep": ""},
			written: "/etc/k0s/containerd.d/shimkit-spin.toml",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			root := t.TempDir()
			writeTree(t, root, tt.files)
			before := snapshot(t, root)
			detected, err := containerdconfig.Detect(root)
			if err != nil || detected.Name != tt.preset {
				t.Fatalf("Detect = %q, %v; want %s", detected.Name, err, tt.preset)
			}
			if !slices.Equal(detected.Units, tt.units) {
				t.Errorf("units = %v, want %v", detected.Units, tt.units)
			}
			target := containerdconfig.Target{Root: root, Preset: detected, Mode: tt.mode}

			change, err := containerdconfig.NewInstall(target, spin).Apply(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(change.Files(), []string{tt.written}) {
				t.Fatalf("changed %v, want %s", change.Files(), tt.written)
			}
			if err := change.Commit(); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(root, tt.written))
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "presets/"+tt.name+".toml", got)

			again, err := containerdconfig.NewInstall(target, spin).Apply(ctx)
			if err != nil || again.Changed() {
				t.Errorf("second install: changed=%v err=%v, want a no-op", again != nil && again.Changed(), err)
			}

			assertUninstallRestores(ctx, t, target, root, before)
		})
	}
}

func TestK3sGeneratedHandlerIsNoop(t *testing.T) {
	root := t.TempDir()
	rendered, _, err := containerdconfig.AddHandler("rendered", []byte("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n  runtime_type = \"io.containerd.runc.v2\"\n"), spin)
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, root, map[string]string{k3sDir + "/config.toml": string(rendered)})
	p, _ := containerdconfig.PresetNamed("k3s")
	change, err := containerdconfig.NewInstall(containerdconfig.Target{Root: root, Preset: p}, spin).Apply(context.Background())
	if err != nil || change.Changed() {
		t.Fatalf("changed=%v err=%v; want a no-op when k3s already generates the handler", change != nil && change.Changed(), err)
	}
	if _, err := os.Stat(filepath.Join(root, k3sDir, "config.toml.tmpl")); !os.IsNotExist(err) {
		t.Errorf("a template was written: %v", err)
	}
}

func TestDetectOrderAndOverride(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"/etc/containerd/config.toml":       "version = 2\n",
		rke2Dir + "/config.toml":            "version = 2\n",
		k3sDir + "/config.toml":             "version = 2\n",
		"/etc/k0s/containerd.d/.keep":       "",
		"/var/snap/microk8s/current/args/x": "",
	})
	for range 20 { // the order is fixed, never map iteration
		p, err := containerdconfig.Detect(root)
		if err != nil || p.Name != "k3s" {
			t.Fatalf("Detect = %s, %v; want k3s first", p.Name, err)
		}
	}
	if _, err := containerdconfig.PresetNamed("openshift"); !errors.Is(err, containerdconfig.ErrUnknownPreset) {
		t.Errorf("PresetNamed(openshift) = %v", err)
	}
	if p, _ := containerdconfig.Detect(t.TempDir()); p.Name != "containerd" {
		t.Errorf("empty root detected as %s, want containerd", p.Name)
	}
}

func TestModeDropInNeedsImports(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"/etc/containerd/config.toml": "version = 2\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n"})
	p, _ := containerdconfig.PresetNamed("containerd")
	_, err := containerdconfig.NewInstall(containerdconfig.Target{Root: root, Preset: p, Mode: containerdconfig.ModeDropIn}, spin).Apply(context.Background())
	if !errors.Is(err, containerdconfig.ErrNoDropIn) {
		t.Fatalf("err = %v, want ErrNoDropIn (containerd 1.x schema)", err)
	}
}

// TestRollbackAndRestore: Rollback puts the original back byte for byte
// with its mode and owner, and Restore recovers a change a crash left
// pending (from the journal next to the file).
func TestRollbackAndRestore(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	orig := "# keep me\r\nversion = 2\r\n"
	writeTree(t, root, map[string]string{"/etc/containerd/config.toml": orig})
	cfgPath := filepath.Join(root, "etc/containerd/config.toml")
	if err := os.Chmod(cfgPath, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(cfgPath, 4242, 4343); err != nil {
		t.Fatal(err)
	}
	p, _ := containerdconfig.PresetNamed("containerd")
	target := containerdconfig.Target{Root: root, Preset: p}

	change, err := containerdconfig.NewInstall(target, spin).Apply(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(cfgPath)
	st := fi.Sys().(*syscall.Stat_t)
	if fi.Mode().Perm() != 0o600 || st.Uid != 4242 || st.Gid != 4343 {
		t.Errorf("edited file has mode %v owner %d:%d, want 0600 4242:4343", fi.Mode().Perm(), st.Uid, st.Gid)
	}
	if _, err := os.Stat(cfgPath + ".shimkit-journal"); err != nil {
		t.Errorf("no journal while the change is pending: %v", err)
	}
	if _, err := os.Stat(cfgPath + ".shimkit-backup"); !os.IsNotExist(err) {
		t.Errorf("a .shimkit-backup was written: %v", err)
	}
	if err := change.Rollback(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(cfgPath); string(got) != orig {
		t.Errorf("after rollback: %q, want %q", got, orig)
	}
	entries, _ := os.ReadDir(filepath.Dir(cfgPath))
	if len(entries) != 1 {
		t.Errorf("left in the directory: %v", entries)
	}

	// A crash after Apply: the backup is there, the edit is on disk.
	if _, err := containerdconfig.NewInstall(target, spin).Apply(ctx); err != nil {
		t.Fatal(err)
	}
	restored, err := containerdconfig.Restore(cfgPath)
	if err != nil || !restored {
		t.Fatalf("Restore = %v, %v", restored, err)
	}
	if got, _ := os.ReadFile(cfgPath); string(got) != orig {
		t.Errorf("after Restore: %q", got)
	}
	if restored, err := containerdconfig.Restore(cfgPath); err != nil || restored {
		t.Errorf("second Restore = %v, %v; want nothing to do", restored, err)
	}
}

func TestHandlerBinaryName(t *testing.T) {
	for rt, want := range map[string]string{
		"io.containerd.spin.v2":      "containerd-shim-spin-v2",
		"io.containerd.kata-qemu.v2": "containerd-shim-kata-qemu-v2",
		"io.containerd.runsc.v1":     "containerd-shim-runsc-v1",
	} {
		if got := (containerdconfig.RuntimeHandler{RuntimeType: rt}).BinaryName(); got != want {
			t.Errorf("BinaryName(%s) = %s, want %s", rt, got, want)
		}
	}
	if !strings.HasPrefix(spin.BinaryName(), "containerd-shim-spin") || bytes.Contains([]byte(spin.BinaryName()), []byte("/")) {
		t.Error(spin.BinaryName())
	}
}

func TestTargetHasHandlerReadsTemplates(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{k3sDir + "/config.toml": "version = 2\n"})
	p, _ := containerdconfig.PresetNamed("k3s")
	target := containerdconfig.Target{Root: root, Preset: p}
	if has, err := target.HasHandler("spin"); err != nil || has {
		t.Fatalf("before: %v %v", has, err)
	}
	if _, err := containerdconfig.NewInstall(target, spin).Apply(context.Background()); err != nil {
		t.Fatal(err)
	}
	if has, err := target.HasHandler("spin"); err != nil || !has {
		t.Errorf("after install into the template: %v %v", has, err)
	}
}
