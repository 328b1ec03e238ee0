package containerdconfig_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/internal/testutil/k3s"
)

// TestK3sTemplateValuesRoundTrip: what shimkit writes into a k3s template
// is rendered by k3s with text/template (the base as "base") before
// containerd reads it. A value or key holding "{{" must reach containerd
// exactly, not be taken for a template action (k3s would refuse the
// template: function "node" not defined). Rendered here the way k3s
// renders it (package k3s), on both template generations, then decoded as
// containerd decodes it; a second install is a no-op and the uninstall
// gives the template's absence back.
func TestK3sTemplateValuesRoundTrip(t *testing.T) {
	h := containerdconfig.RuntimeHandler{
		Name: "spin", RuntimeType: "io.containerd.spin.v2", RuntimePath: "/opt/shimkit/spin/current/containerd-shim-spin-v2",
		Options:        map[string]any{"ConfigPath": "/etc/{{node}}.toml", "a{{b}}": "x{{", "Plain": "{ {}} {"},
		PodAnnotations: []string{"{{.NodeConfig}}"},
	}
	for _, g := range []k3s.Generation{{Schema: 3}, {Schema: 2}} {
		t.Run("schema"+string(rune('0'+g.Schema)), func(t *testing.T) {
			ctx := context.Background()
			root := t.TempDir()
			a := k3s.Agent{Program: "k3s", DataDir: "/var/lib/rancher/k3s", Generation: g, Root: "/var/lib/containerd", PauseImage: "pause:1"}
			render := func() []byte {
				t.Helper()
				out, err := a.RenderConfig(root, "/usr/bin")
				if err != nil {
					t.Fatalf("k3s renders the template: %v", err)
				}
				return out
			}
			writeTree(t, root, map[string]string{k3sDir + "/config.toml": string(render())})
			orig := render()
			p, _ := containerdconfig.PresetNamed("k3s")
			target := containerdconfig.Target{Root: root, Preset: p}
			c, err := containerdconfig.NewInstall(target, h).Apply(ctx)
			if err != nil || !c.Changed() {
				t.Fatalf("install: %v", err)
			}
			if err := c.Commit(); err != nil {
				t.Fatal(err)
			}
			cfg, err := containerdconfig.Parse("config.toml", render())
			if err != nil {
				t.Fatal(err)
			}
			got := cfg.Handler("spin")
			opts, _ := got["options"].(map[string]any)
			for k, v := range h.Options {
				if opts[k] != v {
					t.Errorf("option %q = %#v, want %#v", k, opts[k], v)
				}
			}
			if ann, _ := got["pod_annotations"].([]any); len(ann) != 1 || ann[0] != "{{.NodeConfig}}" {
				t.Errorf("pod_annotations = %#v", got["pod_annotations"])
			}
			var m map[string]any
			if err := toml.Unmarshal(render(), &m); err != nil {
				t.Fatal(err)
			}
			if again, err := containerdconfig.NewInstall(target, h).Apply(ctx); err != nil || again.Changed() {
				t.Errorf("second install: %v (changed %v), want a no-op", err, again != nil && again.Changed())
			}
			u, err := containerdconfig.NewUninstall(target, "spin").Apply(ctx)
			if err != nil || !u.Changed() {
				t.Fatalf("uninstall: %v", err)
			}
			if err := u.Commit(); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"config.toml.tmpl", "config-v3.toml.tmpl"} {
				if _, err := os.Stat(filepath.Join(root, k3sDir, name)); !os.IsNotExist(err) {
					t.Errorf("%s left: %v", name, err)
				}
			}
			if out := render(); !bytes.Equal(out, orig) {
				t.Errorf("rendered after the uninstall:\n%s\nwant\n%s", out, orig)
			}
		})
	}
}

// TestK3sDropInDirCreated: on current k3s (the rendered config imports
// config-v3.toml.d, which k3s does not create) the handler's drop-in goes
// to a directory shimkit creates: the Change says so; Rollback and
// Restore remove it again with the drop-in; after a commit,
// RemoveCreatedDir removes it once empty, and never while someone's file
// is there.
func TestK3sDropInDirCreated(t *testing.T) {
	ctx := context.Background()
	dir := k3sDir + "/config-v3.toml.d"
	setup := func(t *testing.T) (string, containerdconfig.Target) {
		root := t.TempDir()
		a := k3s.Agent{Program: "k3s", DataDir: "/var/lib/rancher/k3s", Generation: k3s.Generation{Schema: 3, Imports: true}, Root: "/var/lib/containerd"}
		out, err := a.RenderConfig(root, "/usr/bin")
		if err != nil {
			t.Fatal(err)
		}
		writeTree(t, root, map[string]string{k3sDir + "/config.toml": string(out)})
		p, _ := containerdconfig.PresetNamed("k3s")
		return root, containerdconfig.Target{Root: root, Preset: p}
	}
	gone := func(t *testing.T, root string) {
		t.Helper()
		if _, err := os.Stat(filepath.Join(root, dir)); !os.IsNotExist(err) {
			t.Errorf("%s left: %v", dir, err)
		}
	}
	t.Run("rollback", func(t *testing.T) {
		root, target := setup(t)
		c, err := containerdconfig.NewInstall(target, spin).Apply(ctx)
		if err != nil || !c.Changed() {
			t.Fatal(err)
		}
		if got := c.CreatedDirs(); len(got) != 1 || got[0] != dir {
			t.Errorf("CreatedDirs = %v, want [%s]", got, dir)
		}
		if err := c.Rollback(); err != nil {
			t.Fatal(err)
		}
		gone(t, root)
	})
	t.Run("restore", func(t *testing.T) {
		root, target := setup(t)
		if _, err := containerdconfig.NewInstall(target, spin).Apply(ctx); err != nil { // a crash: never committed
			t.Fatal(err)
		}
		if restored, err := containerdconfig.Restore(filepath.Join(root, dir, "shimkit-spin.toml")); err != nil || !restored {
			t.Fatalf("restore: %v %v", restored, err)
		}
		gone(t, root)
	})
	t.Run("uninstall", func(t *testing.T) {
		root, target := setup(t)
		c, err := containerdconfig.NewInstall(target, spin).Apply(ctx)
		if err != nil {
			t.Fatal(err)
		}
		created := c.CreatedDirs()
		if err := c.Commit(); err != nil {
			t.Fatal(err)
		}
		writeTree(t, root, map[string]string{dir + "/admin.toml": "version = 3\n"})
		u, err := containerdconfig.NewUninstall(target, "spin").Apply(ctx)
		if err != nil || !u.Changed() {
			t.Fatal(err)
		}
		if err := u.Commit(); err != nil {
			t.Fatal(err)
		}
		if g, err := containerdconfig.RemoveCreatedDir(root, created[0]); err != nil || g {
			t.Fatalf("removed a directory with the admin's file in it: %v %v", g, err)
		}
		if err := os.Remove(filepath.Join(root, dir, "admin.toml")); err != nil {
			t.Fatal(err)
		}
		if g, err := containerdconfig.RemoveCreatedDir(root, created[0]); err != nil || !g {
			t.Fatalf("RemoveCreatedDir: %v %v", g, err)
		}
		gone(t, root)
	})
}
