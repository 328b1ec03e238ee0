package containerdconfig_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shimkit/shimkit/containerdconfig"
)

const userSpinTables = "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.spin]\n  runtime_type = \"io.containerd.spin.v2\"\n  runtime_path = \"/usr/local/bin/containerd-shim-spin-v2\"\n"

// TestInstallAdopt drives adoption through Install on node layouts: Install
// without Adopt refuses the user's handler and touches nothing; with Adopt
// it takes it over (golden file), and Uninstall gives the node back byte
// for byte, the user's handler included.
func TestInstallAdopt(t *testing.T) {
	tests := []struct {
		name    string
		preset  string
		files   map[string]string
		written string
	}{
		{
			name: "containerd-v2", preset: "containerd",
			files:   map[string]string{"/etc/containerd/config.toml": "version = 2\n\n# mine\n" + userSpinTables},
			written: "/etc/containerd/config.toml",
		},
		{
			// k3s renders the user's template, base config and the user's
			// handler, into config.toml.
			name: "k3s-template", preset: "k3s",
			files: map[string]string{
				k3sDir + "/config.toml":      "version = 2\n# rendered base\n\n# mine\n" + userSpinTables,
				k3sDir + "/config.toml.tmpl": "{{ template \"base\" . }}\n\n# mine\n" + strings.TrimSuffix(userSpinTables, "\n"),
			},
			written: k3sDir + "/config.toml.tmpl",
		},
		{
			name: "rke2-v3-template-crlf", preset: "rke2",
			files: map[string]string{
				rke2Dir + "/config.toml": "version = 3\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.spin]\n  runtime_type = 'io.containerd.spin.v2'\n",
				rke2Dir + "/config-v3.toml.tmpl": strings.ReplaceAll("{{ template \"base\" . }}\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.spin]\n"+
					"  runtime_type = 'io.containerd.spin.v2'", "\n", "\r\n"),
			},
			written: rke2Dir + "/config-v3.toml.tmpl",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			root := t.TempDir()
			writeTree(t, root, tt.files)
			before := snapshot(t, root)
			p, _ := containerdconfig.PresetNamed(tt.preset)
			target := containerdconfig.Target{Root: root, Preset: p}

			_, err := containerdconfig.NewInstall(target, spin).Apply(ctx)
			var fe *containerdconfig.FileError
			if !errors.Is(err, containerdconfig.ErrConflict) || !errors.As(err, &fe) || fe.Path != tt.written || fe.Line == 0 {
				t.Fatalf("install without Adopt: %v; want ErrConflict located in %s", err, tt.written)
			}
			if after := snapshot(t, root); !slices.Equal(before, after) {
				t.Fatalf("files changed:\nbefore %q\nafter  %q", before, after)
			}

			change, err := (&containerdconfig.Install{Target: target, Handler: spin, Adopt: true}).Apply(ctx)
			if err != nil || !slices.Equal(change.Files(), []string{tt.written}) {
				t.Fatalf("adopt: %v, files %v", err, change.Files())
			}
			if err := change.Commit(); err != nil {
				t.Fatal(err)
			}
			golden(t, "adopt/golden/install-"+tt.name+".toml", mustRead(t, filepath.Join(root, tt.written)))
			if has, err := target.HasHandler("spin"); err != nil || !has {
				t.Errorf("HasHandler after adopt: %v %v", has, err)
			}
			if again, err := containerdconfig.NewInstall(target, spin).Apply(ctx); err != nil || again.Changed() {
				t.Errorf("install after adopt: changed=%v err=%v, want a no-op", again != nil && again.Changed(), err)
			}

			assertUninstallRestores(ctx, t, target, root, before)
		})
	}
}

// TestInstallRefusesHandlerInMergedFile: a drop-in for a handler that the
// root config (or another drop-in) defines would be merged with it by
// containerd, taking it over; Install refuses, with or without Adopt, and
// names the other file. Editing the root config (ModeFile) adopts it.
func TestInstallRefusesHandlerInMergedFile(t *testing.T) {
	const root3 = "version = 3\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.spin]\n  runtime_type = 'io.containerd.spin.v2'\n"
	for _, tt := range []struct {
		name, inFile string
		files        map[string]string
	}{
		{"root config", "/etc/containerd/config.toml", map[string]string{"/etc/containerd/config.toml": root3}},
		{"another drop-in", "/etc/containerd/conf.d/admin.toml", map[string]string{
			"/etc/containerd/config.toml":       "version = 3\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n",
			"/etc/containerd/conf.d/admin.toml": "version = 3\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.spin]\n  runtime_type = 'io.containerd.spin.v2'\n",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeTree(t, root, tt.files)
			before := snapshot(t, root)
			p, _ := containerdconfig.PresetNamed(containerdconfig.PresetContainerd)
			target := containerdconfig.Target{Root: root, Preset: p}
			for _, adopt := range []bool{false, true} {
				_, err := (&containerdconfig.Install{Target: target, Handler: spin, Adopt: adopt}).Apply(context.Background())
				var fe *containerdconfig.FileError
				if !errors.Is(err, containerdconfig.ErrConflict) || !errors.As(err, &fe) || fe.Path != tt.inFile || fe.Line == 0 {
					t.Fatalf("adopt=%v: err = %v; want ErrConflict located in %s", adopt, err, tt.inFile)
				}
			}
			if after := snapshot(t, root); !slices.Equal(before, after) {
				t.Errorf("files changed:\nbefore %q\nafter  %q", before, after)
			}
		})
	}
	root := t.TempDir()
	writeTree(t, root, map[string]string{"/etc/containerd/config.toml": root3})
	p, _ := containerdconfig.PresetNamed(containerdconfig.PresetContainerd)
	target := containerdconfig.Target{Root: root, Preset: p, Mode: containerdconfig.ModeFile}
	change, err := (&containerdconfig.Install{Target: target, Handler: spin, Adopt: true}).Apply(context.Background())
	if err != nil || !change.Changed() {
		t.Fatalf("adopt in the root config: %v", err)
	}
	if err := change.Rollback(); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, filepath.Join(root, "etc/containerd/config.toml")); !bytes.Equal(got, []byte(root3)) {
		t.Errorf("after rollback: %q", got)
	}
}
