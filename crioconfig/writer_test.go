package crioconfig

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// node is a CRI-O node's files under a temporary root, with the default
// paths (Target.Root).
type node struct {
	t    *testing.T
	root string
	tg   Target
}

func newNode(t *testing.T) *node {
	t.Helper()
	n := &node{t: t, root: t.TempDir()}
	n.tg = Target{Root: n.root}
	n.mkdir("/etc/crio/crio.conf.d")
	n.write("/usr/local/bin/crun", "#!/bin/sh\n", 0o755)
	n.write("/opt/kata/bin/containerd-shim-kata-v2", "#!/bin/sh\n", 0o755)
	n.write("/opt/kata/configuration.toml", "", 0o644)
	return n
}

func (n *node) mkdir(p string) {
	n.t.Helper()
	if err := os.MkdirAll(filepath.Join(n.root, p), 0o755); err != nil {
		n.t.Fatal(err)
	}
}

func (n *node) write(p, data string, mode fs.FileMode) {
	n.t.Helper()
	n.mkdir(filepath.Dir(p))
	if err := os.WriteFile(filepath.Join(n.root, p), []byte(data), mode); err != nil {
		n.t.Fatal(err)
	}
}

func (n *node) read(p string) (string, bool) {
	data, err := os.ReadFile(filepath.Join(n.root, p))
	if errors.Is(err, fs.ErrNotExist) {
		return "", false
	}
	if err != nil {
		n.t.Fatal(err)
	}
	return string(data), true
}

// tree returns every file under /etc/crio with its bytes.
func (n *node) tree() map[string]string {
	n.t.Helper()
	out := map[string]string{}
	base := filepath.Join(n.root, "etc", "crio")
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(n.root, p)
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			out["/"+rel] = "symlink to " + target
			return err
		}
		data, err := os.ReadFile(p)
		out["/"+rel] = string(data)
		return err
	})
	if err != nil {
		n.t.Fatal(err)
	}
	return out
}

// dropIns lists the names in the drop-in directory, recursively.
func (n *node) dropIns() []string {
	var out []string
	base := filepath.Join(n.root, "etc", "crio", "crio.conf.d")
	_ = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(base, p)
			out = append(out, rel)
		}
		return nil
	})
	return out
}

var (
	crunHandler = RuntimeHandler{Name: "crun-wasm", Kind: KindOCI, RuntimePath: "/usr/local/bin/crun", RuntimeRoot: "/run/crun-wasm",
		AllowedAnnotations: []string{"module.wasm.image/variant"}, ContainerMinMemory: "1MiB"}
	kataHandler = RuntimeHandler{Name: "kata", Kind: KindVM, RuntimePath: "/opt/kata/bin/containerd-shim-kata-v2", RuntimeConfigPath: "/opt/kata/configuration.toml"}
)

func TestInstallUninstall(t *testing.T) {
	ctx := context.Background()
	for _, h := range []RuntimeHandler{crunHandler, kataHandler} {
		t.Run(h.Kind, func(t *testing.T) {
			n := newNode(t)
			n.write("/etc/crio/crio.conf", "[crio.runtime]\ndefault_runtime = \"runc\"\n\n[crio.runtime.runtimes.runc]\n", 0o644)
			n.write("/etc/crio/crio.conf.d/10-crun.conf", "[crio.runtime.runtimes.crun]\nruntime_root = \"/run/crun\"\n", 0o600)
			before := n.tree()
			w := NewWriter(n.tg, "shim/a")
			c, err := w.Install(ctx, h)
			if err != nil {
				t.Fatal(err)
			}
			if !c.Changed() || !slices.Contains(c.Files(), "/etc/crio/crio.conf.d/"+DropInName(h.Name)) {
				t.Fatalf("Changed %v, files %v", c.Changed(), c.Files())
			}
			got, _ := n.read(n.tg.DropInPath(h.Name))
			if got != string(Render("shim/a", h.withDefaults())) {
				t.Fatalf("drop-in:\n%s", got)
			}
			if err := c.Commit(); err != nil {
				t.Fatal(err)
			}
			if _, ok := n.read(n.tg.journalPath(h.Name)); ok {
				t.Error("journal left after Commit")
			}
			snap, err := Scan(n.tg)
			if err != nil {
				t.Fatal(err)
			}
			if f := snap.DefiningFiles(h.Name); len(f) != 1 || f[0] != n.tg.DropInPath(h.Name) {
				t.Errorf("defined in %v", f)
			}
			// The same again: nothing to do, CRI-O need not restart.
			c, err = w.Install(ctx, h)
			if err != nil || c.Changed() {
				t.Fatalf("second Install: changed %v, %v", c != nil && c.Changed(), err)
			}
			// An update rewrites the drop-in and the record.
			h2 := h
			h2.AllowedAnnotations = []string{"io.kubernetes.cri-o.Devices"}
			if c, err = w.Install(ctx, h2); err != nil || !c.Changed() {
				t.Fatalf("update: %v", err)
			}
			_ = c.Commit()
			c, err = w.Uninstall(ctx, h.Name)
			if err != nil || !c.Changed() {
				t.Fatalf("Uninstall: %v", err)
			}
			_ = c.Commit()
			after := n.tree()
			delete(after, "/etc/crio/shimkit") // the state directory itself is not a file
			if diff := diffTrees(before, after); diff != "" {
				t.Errorf("install then uninstall changed /etc/crio: %s", diff)
			}
			c, err = w.Uninstall(ctx, h.Name)
			if err != nil || c.Changed() {
				t.Fatalf("second Uninstall: %v", err)
			}
		})
	}
}

func diffTrees(a, b map[string]string) string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			out = append(out, k+" changed or removed")
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k+" added")
		}
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

// TestRefusals: every refusal happens before anything is written.
func TestRefusals(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		setup   func(n *node)
		h       RuntimeHandler
		owner   string
		want    error
		inError string
	}{
		{"foreign handler in crio.conf", func(n *node) {
			n.write("/etc/crio/crio.conf", "[crio.runtime.runtimes.crun-wasm]\nruntime_path = \"/usr/bin/crun\"\n", 0o644)
		}, crunHandler, "", ErrForeignHandler, "/etc/crio/crio.conf:"},
		// CRI-O walks crio.conf.d recursively and reads any name
		// (UpdateFromPath's filepath.Walk), so a backup in a subdirectory counts.
		{"foreign handler in a nested backup", func(n *node) {
			n.write("/etc/crio/crio.conf.d/old/zz-wasm.conf.bak", "[crio.runtime.runtimes.crun-wasm]\n", 0o644)
		}, crunHandler, "", ErrForeignHandler, "/etc/crio/crio.conf.d/old/zz-wasm.conf.bak"},
		{"foreign handler sorting before ours", func(n *node) {
			n.write("/etc/crio/crio.conf.d/01-kata.conf", "[crio.runtime.runtimes.kata]\nruntime_type = \"vm\"\n", 0o644)
		}, kataHandler, "", ErrForeignHandler, "01-kata.conf"},
		{"default runtime crun", nil, RuntimeHandler{Name: "crun", Kind: KindOCI, RuntimePath: "/usr/local/bin/crun"}, "", ErrReserved, "default runtime"},
		// CRI-O's DefaultConfig defines crun before reading any file.
		{"built-in crun when the default is runc", func(n *node) {
			n.write("/etc/crio/crio.conf", "[crio.runtime]\ndefault_runtime = \"runc\"\n[crio.runtime.runtimes.runc]\n", 0o644)
		}, RuntimeHandler{Name: "crun", Kind: KindOCI, RuntimePath: "/usr/local/bin/crun"}, "", ErrReserved, "built-in"},
		{"default runtime set in a drop-in", func(n *node) {
			n.write("/etc/crio/crio.conf.d/00-default.conf", "[crio.runtime]\ndefault_runtime = \"crun-wasm\"\n", 0o644)
		}, crunHandler, "", ErrReserved, "default runtime"},
		{"a file CRI-O reads is not TOML", func(n *node) {
			n.write("/etc/crio/crio.conf.d/50-broken.conf", "[crio.runtime\n", 0o644)
		}, crunHandler, "", ErrParse, "50-broken.conf"},
		// CRI-O's walk does not follow a symlink to a directory: it reads
		// it as a file, fails, and does not start.
		{"a symlink to a directory in crio.conf.d", func(n *node) {
			n.mkdir("/etc/crio/elsewhere")
			if err := os.Symlink(filepath.Join(n.root, "etc/crio/elsewhere"), filepath.Join(n.root, "etc/crio/crio.conf.d/60-link")); err != nil {
				t.Fatal(err)
			}
		}, crunHandler, "", ErrParse, "60-link"},
		{"runtimes entry not a table", func(n *node) {
			n.write("/etc/crio/crio.conf", "[crio.runtime.runtimes]\nx = 1\n", 0o644)
		}, crunHandler, "", ErrParse, "not a table"},
		{"binary missing", nil, with(crunHandler, func(h *RuntimeHandler) { h.RuntimePath = "/usr/local/bin/nope" }), "", ErrBinary, "/usr/local/bin/nope"},
		{"binary not executable", func(n *node) {
			if err := os.Chmod(filepath.Join(n.root, "usr/local/bin/crun"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, crunHandler, "", ErrBinary, "not executable"},
		{"binary a directory", func(n *node) {
			n.mkdir("/usr/local/bin/dir")
		}, with(crunHandler, func(h *RuntimeHandler) { h.RuntimePath = "/usr/local/bin/dir" }), "", ErrBinary, "directory"},
		{"vm config missing", nil, with(kataHandler, func(h *RuntimeHandler) { h.RuntimeConfigPath = "/opt/kata/none.toml" }), "", ErrBinary, "runtime_config_path"},
		{"vm binary misnamed", func(n *node) { n.write("/opt/kata/bin/kata", "", 0o755) },
			with(kataHandler, func(h *RuntimeHandler) { h.RuntimePath = "/opt/kata/bin/kata" }), "", ErrInvalidHandler, "containerd-shim-<name>-v2"},
		{"our name, no record", func(n *node) {
			n.write("/etc/crio/crio.conf.d/90-shimkit-crun-wasm.conf", "[crio.runtime.runtimes.crun-wasm]\n", 0o644)
		}, crunHandler, "", ErrNotOurs, "no record"},
		{"another owner's", func(n *node) { install(n, "shim/b", crunHandler) }, crunHandler, "", ErrNotOurs, "for shim/b, not shim/a"},
		{"ours, edited since", func(n *node) {
			install(n, "shim/a", crunHandler)
			n.write("/etc/crio/crio.conf.d/90-shimkit-crun-wasm.conf", "[crio.runtime.runtimes.crun-wasm]\n# mine now\n", 0o644)
		}, crunHandler, "", ErrNotOurs, "changed since"},
		{"pending journal", func(n *node) {
			n.write("/etc/crio/shimkit/crun-wasm.journal.json", "{}", 0o600)
		}, crunHandler, "", ErrPending, "Restore"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := newNode(t)
			if c.setup != nil {
				c.setup(n)
			}
			before := n.tree()
			_, err := NewWriter(n.tg, "shim/a").Install(ctx, c.h)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.inError) {
				t.Fatalf("Install = %v, want %v naming %q", err, c.want, c.inError)
			}
			if Reason(err) == "" {
				t.Errorf("no Reason for %v", err)
			}
			if diff := diffTrees(before, n.tree()); diff != "" {
				t.Errorf("a refused Install wrote: %s", diff)
			}
		})
	}
}

func with(h RuntimeHandler, f func(*RuntimeHandler)) RuntimeHandler { f(&h); return h }

func install(n *node, owner string, h RuntimeHandler) {
	n.t.Helper()
	c, err := NewWriter(n.tg, owner).Install(context.Background(), h)
	if err == nil {
		err = c.Commit()
	}
	if err != nil {
		n.t.Fatal(err)
	}
}

func TestUninstallRefusals(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name  string
		setup func(n *node)
		want  error
	}{
		{"someone's file at our name", func(n *node) {
			n.write("/etc/crio/crio.conf.d/90-shimkit-crun-wasm.conf", "[crio.runtime.runtimes.crun-wasm]\n", 0o644)
		}, ErrNotOurs},
		{"another owner's", func(n *node) { install(n, "shim/b", crunHandler) }, ErrNotOurs},
		{"edited since", func(n *node) {
			install(n, "shim/a", crunHandler)
			n.write("/etc/crio/crio.conf.d/90-shimkit-crun-wasm.conf", "# emptied by an admin\n", 0o644)
		}, ErrNotOurs},
		{"bad name", nil, ErrInvalidHandler},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := newNode(t)
			if c.setup != nil {
				c.setup(n)
			}
			before := n.tree()
			name := "crun-wasm"
			if c.name == "bad name" {
				name = "../x"
			}
			if _, err := NewWriter(n.tg, "shim/a").Uninstall(ctx, name); !errors.Is(err, c.want) {
				t.Fatalf("Uninstall = %v, want %v", err, c.want)
			}
			if diff := diffTrees(before, n.tree()); diff != "" {
				t.Errorf("a refused Uninstall wrote: %s", diff)
			}
		})
	}
}

func TestStateDirInsideDropInDir(t *testing.T) {
	n := newNode(t)
	tg := n.tg
	tg.StateDir = "/etc/crio/crio.conf.d/shimkit"
	_, err := NewWriter(tg, "shim/a").Install(context.Background(), crunHandler)
	if err == nil || !strings.Contains(err.Error(), "inside the drop-in directory") {
		t.Fatalf("Install = %v", err)
	}
	if got := n.dropIns(); len(got) != 0 {
		t.Errorf("wrote %v", got)
	}
}

func TestOwnerChecked(t *testing.T) {
	n := newNode(t)
	for _, o := range []string{"", "a\nb"} {
		if _, err := NewWriter(n.tg, o).Install(context.Background(), crunHandler); err == nil {
			t.Errorf("owner %q accepted", o)
		}
	}
}

// TestVMRuntimeRoot: a vm handler gets an absolute runtime_root, its own
// or VMRuntimeRoot; without one CRI-O v1.34 makes the shim's IO FIFOs
// under the relative crio/fifo, which the shim cannot open (the real
// TestRealCRIOPodOnVMHandler fails so).
func TestVMRuntimeRoot(t *testing.T) {
	for _, c := range []struct{ root, want string }{
		{"", `runtime_root = "/run/shimkit/crio/kata"`},
		{"/run/vc", `runtime_root = "/run/vc"`},
	} {
		n := newNode(t)
		h := kataHandler
		h.RuntimeRoot = c.root
		if _, err := NewWriter(n.tg, "shim/a").Install(context.Background(), h); err != nil {
			t.Fatal(err)
		}
		got, _ := n.read(n.tg.DropInPath(h.Name))
		if !strings.Contains(got, c.want+"\n") {
			t.Errorf("runtime_root %q: drop-in\n%s\nwant %s", c.root, got, c.want)
		}
		f := NewFake("shim/a")
		if _, err := f.Install(context.Background(), h); err != nil || f.Handlers()[h.Name].RuntimeRoot != strings.Split(c.want, `"`)[1] {
			t.Errorf("fake: %v, %+v", err, f.Handlers()[h.Name])
		}
	}
}

// TestHolds: Holds is true only where Install would change no file.
func TestHolds(t *testing.T) {
	ctx := context.Background()
	n := newNode(t)
	w := NewWriter(n.tg, "shim/a")
	if ok, err := w.Holds(kataHandler); ok || err != nil {
		t.Fatalf("before the install: %v, %v", ok, err)
	}
	c, err := w.Install(ctx, kataHandler)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(); err != nil {
		t.Fatal(err)
	}
	if ok, err := w.Holds(kataHandler); !ok || err != nil {
		t.Errorf("after the install: %v, %v", ok, err)
	}
	changed := kataHandler
	changed.ContainerMinMemory = "64MiB"
	if ok, err := w.Holds(changed); ok || err != nil {
		t.Errorf("a changed handler: %v, %v", ok, err)
	}
	if ok, err := NewWriter(n.tg, "shim/b").Holds(kataHandler); ok || !errors.Is(err, ErrNotOurs) {
		t.Errorf("another owner: %v, %v", ok, err)
	}
}
