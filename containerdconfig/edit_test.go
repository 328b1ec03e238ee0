package containerdconfig_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/shimkit/shimkit/containerdconfig"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// spin is the handler the golden tests add.
var spin = containerdconfig.RuntimeHandler{
	Name:        "spin",
	RuntimeType: "io.containerd.spin.v2",
	RuntimePath: "/opt/shimkit/bin/containerd-shim-spin-v2",
	Options: map[string]any{
		"ConfigPath": "/etc/spin/config.toml",
		"Limits":     map[string]any{"max-memory": int64(268435456), "weird key": "quoted \"value\""},
	},
	PodAnnotations:               []string{"spin.fermyon.com/*"},
	ContainerAnnotations:         []string{"io.kubernetes.cri.*"},
	PrivilegedWithoutHostDevices: true,
}

// golden compares got with testdata/<name>, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (-want +got):\n%s", path, cmp.Diff(string(want), string(got)))
	}
}

// TestAddRemoveGolden adds the spin handler to configs of every schema and
// shape, compares with golden files, and removes it again.
func TestAddRemoveGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/edit/*.toml")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no inputs: %v", err)
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".toml")
		t.Run(name, func(t *testing.T) {
			orig, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			before, err := containerdconfig.Parse(in, orig)
			if err != nil {
				t.Fatal(err)
			}
			if want := name[1] - '0'; before.Version != int(want) {
				t.Errorf("Parse says version %d, file name says %d", before.Version, want)
			}
			add := containerdconfig.AddHandler
			if before.HasHandler("spin") {
				// Issue #14: a handler shimkit did not write is never
				// taken over silently; adoption is asked for explicitly.
				out, _, err := containerdconfig.AddHandler(in, orig, spin)
				if !errors.Is(err, containerdconfig.ErrConflict) || out != nil {
					t.Fatalf("AddHandler on the user's handler: err = %v, out %d bytes; want ErrConflict and nothing", err, len(out))
				}
				add = containerdconfig.AdoptHandler
			}
			out, changed, err := add(in, orig, spin)
			if err != nil {
				t.Fatal(err)
			}
			if !changed {
				t.Fatal("AddHandler reported no change")
			}
			golden(t, "edit/golden/"+name+".add.toml", out)

			after, err := containerdconfig.Parse(in, out)
			if err != nil {
				t.Fatal(err)
			}
			if !after.HasHandler("spin") || after.Version != before.Version {
				t.Errorf("after add: handlers %v, version %d", after.Handlers, after.Version)
			}

			again, changed, err := containerdconfig.AddHandler(in, out, spin)
			if err != nil || changed || !bytes.Equal(again, out) {
				t.Errorf("second add: changed=%v err=%v; want a no-op", changed, err)
			}

			adopted, changed, err := containerdconfig.AdoptHandler(in, out, spin)
			if err != nil || changed || !bytes.Equal(adopted, out) {
				t.Errorf("adopt after add: changed=%v err=%v; want a no-op", changed, err)
			}

			assertRemoveGivesBack(t, in, out, orig)
		})
	}
}

// TestUpdateInPlace changes a handler shimkit added: the managed block is
// rewritten where it is, nothing else moves.
func TestUpdateInPlace(t *testing.T) {
	orig, err := os.ReadFile("testdata/edit/v2-neighbour-spin-v2.toml")
	if err != nil {
		t.Fatal(err)
	}
	v1, _, err := containerdconfig.AddHandler("f", orig, spin)
	if err != nil {
		t.Fatal(err)
	}
	// Something after the block, as if added later by hand.
	v1 = append(v1, []byte("\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"/etc/containerd/certs.d\"\n")...)
	newer := spin
	newer.RuntimePath = "/opt/shimkit/bin/v2/containerd-shim-spin-v2"
	newer.Options = nil
	v2, changed, err := containerdconfig.AddHandler("f", v1, newer)
	if err != nil || !changed {
		t.Fatalf("update: changed=%v err=%v", changed, err)
	}
	golden(t, "edit/golden/update-in-place.toml", v2)
	if !bytes.HasSuffix(v2, []byte("config_path = \"/etc/containerd/certs.d\"\n")) {
		t.Error("the table after the managed block moved")
	}
}

// TestRemoveLeavesUserHandler: a handler shimkit did not write stays.
func TestRemoveLeavesUserHandler(t *testing.T) {
	orig, err := os.ReadFile("testdata/edit/v2-user-spin-different.toml")
	if err != nil {
		t.Fatal(err)
	}
	out, changed, err := containerdconfig.RemoveHandler("f", orig, "spin")
	if err != nil || changed || !bytes.Equal(out, orig) {
		t.Errorf("changed=%v err=%v; want the user's handler left alone", changed, err)
	}
}

func TestParseReports(t *testing.T) {
	tests := []struct {
		file     string
		version  int
		plugin   string
		imports  []string
		handlers []string
		def      string
	}{
		{"v1-empty.toml", 1, "cri", nil, nil, "runc"},
		{"v1-short-ids.toml", 1, "cri", nil, nil, "runc"},
		{"v2-default-containerd-1.6.toml", 2, "io.containerd.grpc.v1.cri", nil, []string{"runc"}, "runc"},
		{"v2-neighbour-spin-v2.toml", 2, "io.containerd.grpc.v1.cri", nil, []string{"runc", "spin-v2"}, "runc"},
		{"v3-default-containerd-2.2.toml", 3, "io.containerd.cri.v1.runtime", []string{"/etc/containerd/conf.d/*.toml"}, []string{"runc"}, "runc"},
		{"v4-default-containerd-2.3.toml", 4, "io.containerd.cri.v1.runtime", []string{"/etc/containerd/conf.d/*.toml"}, []string{"runc"}, "runc"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata/edit", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			c, err := containerdconfig.Parse(tt.file, data)
			if err != nil {
				t.Fatal(err)
			}
			if c.Version != tt.version || c.CRIPluginID() != tt.plugin || c.DefaultRuntime != tt.def ||
				!cmp.Equal(c.Imports, tt.imports) || !cmp.Equal(c.Handlers, tt.handlers) {
				t.Errorf("got version %d plugin %s imports %v handlers %v default %s",
					c.Version, c.CRIPluginID(), c.Imports, c.Handlers, c.DefaultRuntime)
			}
		})
	}
}

// assertRemoveGivesBack removes the handler spin from data (file in) and
// checks that the original bytes come back.
func assertRemoveGivesBack(t *testing.T, in string, data, orig []byte) {
	t.Helper()
	back, changed, err := containerdconfig.RemoveHandler(in, data, "spin")
	if err != nil || !changed {
		t.Fatalf("remove: changed=%v err=%v", changed, err)
	}
	if !bytes.Equal(back, orig) {
		t.Errorf("remove does not give the original back byte for byte:\n%s", cmp.Diff(string(orig), string(back)))
	}
}

// assertUninstallRestores uninstalls the handler spin from target, commits,
// and checks that the files under root are as before.
func assertUninstallRestores(ctx context.Context, t *testing.T, target containerdconfig.Target, root string, before []string) {
	t.Helper()
	change, err := containerdconfig.NewUninstall(target, "spin").Apply(ctx)
	if err != nil || !change.Changed() {
		t.Fatalf("uninstall: err=%v", err)
	}
	if err := change.Commit(); err != nil {
		t.Fatal(err)
	}
	if after := snapshot(t, root); !slices.Equal(before, after) {
		t.Errorf("node not as before:\n%s", cmp.Diff(before, after))
	}
}
