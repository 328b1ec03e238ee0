package containerdconfig_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/shimkit/shimkit/containerdconfig"
)

// Another writer's edits, applied to a file after shimkit changed it.
var (
	tail         = "\n[proxy_plugins.other]\n  type = \"snapshot\"\n  address = \"/run/other.sock\"\n"
	appendTable  = func(d []byte) []byte { return append(bytes.Clone(d), tail...) }
	editElswhere = func(d []byte) []byte {
		return bytes.Replace(d, []byte(`config_path = "/etc/containerd/certs.d"`), []byte(`config_path = "/etc/containerd/mine.d"`), 1)
	}
	editInBlock = func(d []byte) []byte {
		return bytes.Replace(d, []byte(`  privileged_without_host_devices = true`), []byte(`  privileged_without_host_devices = false`), 1)
	}
	breakFile  = func(d []byte) []byte { return append(bytes.Clone(d), "[broken\n"...) }
	removeIt   = func([]byte) []byte { return nil }
	recreateIt = func([]byte) []byte { return []byte("# mine now\nversion = 2\n") }
	noEdit     = func(d []byte) []byte { return d }
)

const (
	userSpinV2 = "version = 2\n\n# mine\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.spin]\n  runtime_type = \"io.containerd.spin.v2\"\n  runtime_path = \"/usr/local/bin/containerd-shim-spin-v2\"\n\n" +
		"[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"/etc/containerd/certs.d\"\n"
	plainV2      = "version = 2\n\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"/etc/containerd/certs.d\"\n"
	dropInSeedV3 = "# Runtime handler \"spin\" for containerd, written by shimkit.\nversion = 3\n"
	configSeedV2 = "# Created by shimkit for runtime handlers; deleted when the last one is removed.\nversion = 2\n"
	templateSeed = "# Created by shimkit: the distribution's config plus runtime handlers.\n{{ template \"base\" . }}\n"
	k3sTemplate  = "{{ template \"base\" . }}\n\n# the user's mirror\n[plugins.\"io.containerd.grpc.v1.cri\".registry.mirrors.\"docker.io\"]\n  endpoint = [\"https://mirror.example\"]\n"
)

type casCase struct {
	name   string
	preset string
	files  map[string]string
	setup  func(containerdconfig.Target) containerdconfig.Mutator // committed before the change under test
	change func(containerdconfig.Target) containerdconfig.Mutator
	file   string              // node path the change writes
	other  func([]byte) []byte // nil result: the other writer removes the file
	// want is what the file must hold after the undo, from what it held
	// before the change (base: the seed of a file the change created);
	// nil: absent. err: the undo must fail with ErrConcurrentEdit instead.
	want  func(base []byte) []byte
	base  string
	check func(t *testing.T, got []byte)
	err   bool
}

func install(t containerdconfig.Target) containerdconfig.Mutator {
	return containerdconfig.NewInstall(t, spin)
}
func adoptSpin(t containerdconfig.Target) containerdconfig.Mutator {
	return &containerdconfig.Install{Target: t, Handler: spin, Adopt: true}
}
func updateSpin(t containerdconfig.Target) containerdconfig.Mutator {
	newer := spin
	newer.RuntimePath = "/opt/shimkit/bin/v2/containerd-shim-spin-v2"
	return containerdconfig.NewInstall(t, newer)
}
func uninstall(t containerdconfig.Target) containerdconfig.Mutator {
	return containerdconfig.NewUninstall(t, "spin")
}

func casCases() []casCase {
	const cfg = "/etc/containerd/config.toml"
	v2 := map[string]string{cfg: plainV2}
	user := map[string]string{cfg: userSpinV2}
	k3s := map[string]string{k3sDir + "/config.toml": "version = 2\n", k3sDir + "/config.toml.tmpl": k3sTemplate}
	v3 := map[string]string{cfg: "version = 3\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n"}
	dropIn := "/etc/containerd/conf.d/shimkit-spin.toml"
	return []casCase{
		{name: "install/append-table", files: v2, change: install, file: cfg, other: appendTable, want: appendTable},
		{name: "install/edit-elsewhere", files: v2, change: install, file: cfg, other: editElswhere, want: editElswhere},
		{name: "install/blocks-removed-by-other", files: v2, change: install, file: cfg, other: func([]byte) []byte { return appendTable([]byte(plainV2)) }, want: appendTable},
		{name: "install/edit-in-block", files: v2, change: install, file: cfg, other: editInBlock, err: true},
		{name: "install/file-removed", files: v2, change: install, file: cfg, other: removeIt, err: true},
		{name: "install/no-longer-parses", files: v2, change: install, file: cfg, other: breakFile, err: true},
		{name: "adopt/append-table", files: user, change: adoptSpin, file: cfg, other: appendTable, want: appendTable},
		{name: "adopt/edit-elsewhere", files: user, change: adoptSpin, file: cfg, other: editElswhere, want: editElswhere},
		{name: "adopt/edit-in-block", files: user, change: adoptSpin, file: cfg, other: editInBlock, err: true},
		{name: "update/append-table", files: v2, setup: install, change: updateSpin, file: cfg, other: appendTable, want: appendTable},
		{name: "update/edit-in-block", files: v2, setup: install, change: updateSpin, file: cfg, other: editInBlock, err: true},
		{name: "update-adopted/edit-elsewhere", files: user, setup: adoptSpin, change: updateSpin, file: cfg, other: editElswhere, want: editElswhere},
		{name: "uninstall-adopted/append-table", files: user, setup: adoptSpin, change: uninstall, file: cfg, other: appendTable, want: appendTable},
		{
			name: "uninstall/append-table", files: v2, setup: install, change: uninstall, file: cfg, other: appendTable,
			check: func(t *testing.T, got []byte) {
				c, err := containerdconfig.Parse(cfg, got)
				if err != nil || c.Handler("spin")["runtime_path"] != spin.RuntimePath || !bytes.Contains(got, []byte(tail)) ||
					bytes.Count(got, []byte("# >>> shimkit: runtime handler")) != 1 {
					t.Errorf("the handler is not back beside the other edit (%v):\n%s", err, got)
				}
			},
		},
		{
			name: "proxy/append-table", files: v2, file: cfg, other: appendTable, want: appendTable,
			change: func(t containerdconfig.Target) containerdconfig.Mutator {
				return containerdconfig.NewInstallProxyPlugin(t, vmm)
			},
		},
		{name: "k3s-template/append-table", preset: "k3s", files: k3s, change: install, file: k3sDir + "/config.toml.tmpl", other: appendTable, want: appendTable},
		{name: "k3s-template/edit-in-block", preset: "k3s", files: k3s, change: install, file: k3sDir + "/config.toml.tmpl", other: editInBlock, err: true},
		{name: "created-k3s-template/append-table", preset: "k3s", files: map[string]string{k3sDir + "/config.toml": "version = 2\n"}, change: install, file: k3sDir + "/config.toml.tmpl", other: appendTable, base: templateSeed, want: appendTable},
		{name: "created-drop-in/untouched", files: v3, change: install, file: dropIn, other: noEdit, want: func([]byte) []byte { return nil }},
		{name: "created-drop-in/append-table", files: v3, change: install, file: dropIn, other: appendTable, base: dropInSeedV3, want: appendTable},
		{name: "created-drop-in/edit-in-block", files: v3, change: install, file: dropIn, other: editInBlock, err: true},
		{name: "created-drop-in/removed", files: v3, change: install, file: dropIn, other: removeIt, want: func([]byte) []byte { return nil }},
		{name: "created-config/append-table", files: map[string]string{"/etc/hostname": "node\n"}, change: install, file: cfg, other: appendTable, base: configSeedV2, want: appendTable},
		{name: "removed-config/recreated", files: map[string]string{"/etc/hostname": "node\n"}, setup: install, change: uninstall, file: cfg, other: recreateIt, err: true},
	}
}

// TestUndoKeepsOtherWriters changes a file, lets another writer edit it,
// then undoes the change with Rollback and, after a simulated crash, with
// Restore: the other writer's edit always survives; shimkit's blocks go
// when that is possible, and otherwise the file is left exactly as the
// other writer left it, with ErrConcurrentEdit.
func TestUndoKeepsOtherWriters(t *testing.T) {
	for _, tt := range casCases() {
		for _, how := range []string{"rollback", "restore"} {
			t.Run(tt.name+"/"+how, func(t *testing.T) { testUndo(t, tt, how) })
		}
	}
}

func testUndo(t *testing.T, tt casCase, how string) {
	ctx := context.Background()
	root := t.TempDir()
	writeTree(t, root, tt.files)
	preset := tt.preset
	if preset == "" {
		preset = containerdconfig.PresetContainerd
	}
	p, err := containerdconfig.PresetNamed(preset)
	if err != nil {
		t.Fatal(err)
	}
	target := containerdconfig.Target{Root: root, Preset: p}
	if tt.setup != nil {
		c, err := tt.setup(target).Apply(ctx)
		if err != nil || c.Commit() != nil {
			t.Fatalf("setup: %v", err)
		}
	}
	local := filepath.Join(root, tt.file)
	base, _ := os.ReadFile(local)
	if tt.base != "" {
		base = []byte(tt.base)
	}
	change, err := tt.change(target).Apply(ctx)
	if err != nil || !change.Changed() {
		t.Fatalf("apply: %v", err)
	}
	written, _ := os.ReadFile(local)
	edited := tt.other(written)
	if edited == nil {
		if err := os.Remove(local); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	} else if err := os.WriteFile(local, edited, 0o644); err != nil {
		t.Fatal(err)
	}

	if how == "rollback" {
		err = change.Rollback()
	} else {
		_, err = containerdconfig.Restore(local)
	}
	got, gerr := os.ReadFile(local)
	if gerr != nil {
		got = nil
	}
	_, jerr := os.Stat(local + ".shimkit-journal")
	if tt.err {
		var fe *containerdconfig.FileError
		if !errors.Is(err, containerdconfig.ErrConcurrentEdit) || !errors.As(err, &fe) || !strings.HasSuffix(fe.Path, tt.file) {
			t.Fatalf("err = %v; want a *FileError naming %s wrapping ErrConcurrentEdit", err, tt.file)
		}
		if !bytes.Equal(got, edited) {
			t.Errorf("the file is not as the other writer left it:\n%s", cmp.Diff(string(edited), string(got)))
		}
		if jerr != nil {
			t.Errorf("the journal is gone after a refused undo: %v", jerr)
		}
		// Someone accepts the file as it is.
		if err := containerdconfig.ForgetPending(local); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(local + ".shimkit-journal"); !os.IsNotExist(err) {
			t.Errorf("journal left after ForgetPending: %v", err)
		}
		if again, _ := os.ReadFile(local); !bytes.Equal(again, got) {
			t.Error("ForgetPending changed the file")
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: %v", how, err)
	}
	if tt.want != nil {
		if want := tt.want(base); !bytes.Equal(got, want) || (want == nil) != (gerr != nil) {
			t.Errorf("after %s (-want +got):\n%s", how, cmp.Diff(string(want), string(got)))
		}
	}
	if tt.check != nil {
		tt.check(t, got)
	}
	if got != nil {
		if _, err := containerdconfig.Parse(tt.file, bytes.ReplaceAll(got, []byte("{{"), []byte("#{"))); err != nil {
			t.Errorf("result does not parse: %v", err)
		}
	}
	if !os.IsNotExist(jerr) {
		t.Errorf("journal left: %v", jerr)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(local), ".*shimkit-tmp*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
