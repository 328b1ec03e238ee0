package containerdconfig_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/shimkit/shimkit/containerdconfig"
)

var fuzzHandler = containerdconfig.RuntimeHandler{
	Name:        "fuzz-shim",
	RuntimeType: "io.containerd.fuzz.v2",
	RuntimePath: "/opt/shimkit/bin/containerd-shim-fuzz-v2",
	Options:     map[string]any{"Key": "v", "Table": map[string]any{"n": int64(1)}},
}

// FuzzAddRemove checks, for any input: what parses gets the handler added
// with every original setting kept, and add then remove gives back the
// original bytes; what does not parse is rejected and no file is written.
func FuzzAddRemove(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/edit/*.toml")
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"", "\n", "version = 3", "version = 2\r\n", "[plugins]", "a = 1 # c", "[[x]]\ny = 1\n",
		"version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\nruntimes = {}\n",
		"version = 2\n# >>> shimkit: runtime handler \"x\" >>>\n",
		"version = 9\n", "[a\n", "a = \"\"\"\n[b]\n\"\"\"\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tree := map[string]any{}
		parseErr := toml.Unmarshal(data, &tree)
		out, changed, err := containerdconfig.AddHandler("fuzz.toml", data, fuzzHandler)
		if parseErr != nil {
			if !errors.Is(err, containerdconfig.ErrParse) {
				t.Fatalf("invalid TOML accepted: err=%v", err)
			}
			assertNoWrite(t, data)
			return
		}
		if err != nil {
			var fe *containerdconfig.FileError
			if !errors.As(err, &fe) || !errors.Is(err, containerdconfig.ErrConflict) && !errors.Is(err, containerdconfig.ErrVersion) {
				t.Fatalf("valid TOML refused without a located conflict: %v", err)
			}
			return
		}
		if !changed {
			if !bytes.Equal(out, data) {
				t.Fatal("unchanged but different bytes")
			}
			return
		}
		cfg, err := containerdconfig.Parse("out", out)
		if err != nil {
			t.Fatalf("result does not parse: %v\n%s", err, out)
		}
		if !cfg.HasHandler(fuzzHandler.Name) {
			t.Fatalf("handler missing from result:\n%s", out)
		}
		before, _ := containerdconfig.Parse("in", data)
		if before.HasHandler(fuzzHandler.Name) {
			if !bytes.Contains(data, []byte(`# >>> shimkit: runtime handler "fuzz-shim"`)) {
				t.Fatalf("a handler shimkit did not write was taken over:\n%s", out)
			}
			return // shimkit's own block, updated in place
		}
		back, changed, err := containerdconfig.RemoveHandler("out", out, fuzzHandler.Name)
		if err != nil || !changed {
			t.Fatalf("remove: changed=%v err=%v", changed, err)
		}
		if !bytes.Equal(back, data) {
			t.Fatalf("add then remove differs:\nin:  %q\nout: %q", data, back)
		}
	})
}

// assertNoWrite runs the Mutator on a node root holding data and checks it
// fails and leaves the file as it was.
func assertNoWrite(t *testing.T, data []byte) {
	root := t.TempDir()
	path := filepath.Join(root, "etc/containerd/config.toml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	p, _ := containerdconfig.PresetNamed("containerd")
	if _, err := containerdconfig.NewInstall(containerdconfig.Target{Root: root, Preset: p}, fuzzHandler).Apply(context.Background()); err == nil {
		t.Fatal("Install accepted invalid TOML")
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("invalid file was rewritten: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("files appeared: %v", entries)
	}
}

// FuzzAdoptRemove checks, for any input that parses and defines the spin
// handler outside a shimkit block: AddHandler refuses it and returns
// nothing; AdoptHandler either refuses it as a located ErrConflict (a form
// it cannot put back) or adopts it so that the result parses with every
// setting of the input outside the handler, and RemoveHandler then gives
// the input back byte for byte. Nothing panics. The seed corpus is
// testdata/fuzz/FuzzAdoptRemove and the adoption inputs in testdata/adopt.
func FuzzAdoptRemove(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/adopt/*.toml")
	seeds = append(seeds, "testdata/edit/v2-user-spin-different.toml")
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		before, err := containerdconfig.Parse("in.toml", data)
		if err != nil {
			_, _, err := containerdconfig.AdoptHandler("in.toml", data, spin)
			if err == nil {
				t.Fatal("invalid input adopted")
			}
			return
		}
		out, changed, err := containerdconfig.AdoptHandler("in.toml", data, spin)
		if !before.HasHandler("spin") || bytes.Contains(data, []byte(`# >>> shimkit: runtime handler "spin"`)) {
			return // not the user's handler: AddHandler's own properties (FuzzAddRemove)
		}
		if added, _, aerr := containerdconfig.AddHandler("in.toml", data, spin); !errors.Is(aerr, containerdconfig.ErrConflict) || added != nil {
			t.Fatalf("AddHandler took over the user's handler: err=%v", aerr)
		}
		if err != nil {
			var fe *containerdconfig.FileError
			if !errors.As(err, &fe) || !errors.Is(err, containerdconfig.ErrConflict) && !errors.Is(err, containerdconfig.ErrVersion) {
				t.Fatalf("refused without a located conflict: %v", err)
			}
			return
		}
		if !changed {
			t.Fatal("adopting the user's handler changed nothing")
		}
		after, err := containerdconfig.Parse("out.toml", out)
		if err != nil || after.Handler("spin")["runtime_path"] != spin.RuntimePath {
			t.Fatalf("result does not hold the handler (%v):\n%s", err, out)
		}
		back, changed, err := containerdconfig.RemoveHandler("out.toml", out, "spin")
		if err != nil || !changed {
			t.Fatalf("remove: changed=%v err=%v", changed, err)
		}
		if orphanKeeper(data) {
			return // the runc block goes with the last shimkit handler
		}
		if !bytes.Equal(back, data) {
			t.Fatalf("adopt then remove differs:\nin:  %q\nout: %q", data, back)
		}
	})
}

// orphanKeeper reports a shimkit block keeping runc without any shimkit
// handler block, which RemoveHandler removes with the last handler.
func orphanKeeper(data []byte) bool {
	return bytes.Contains(data, []byte(`# >>> shimkit: default runtime "runc"`)) && !bytes.Contains(data, []byte("# >>> shimkit: runtime handler "))
}
