package containerdconfig_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/shimkit/shimkit/containerdconfig"
)

// adoptInputs are configs whose spin handler someone else wrote: the
// issue's reproduction and one per schema and shape.
func adoptInputs(t *testing.T) []string {
	t.Helper()
	inputs, err := filepath.Glob("testdata/adopt/*.toml")
	if err != nil || len(inputs) < 7 {
		t.Fatalf("inputs: %v %v", inputs, err)
	}
	return append(inputs, "testdata/edit/v2-user-spin-different.toml")
}

// TestAdoptRoundTrip is issue #14: AddHandler refuses a handler it did not
// write, whether its settings match or not, and leaves the file alone;
// AdoptHandler takes it over explicitly, and RemoveHandler then gives back
// the original bytes, also after the adopted handler was updated.
func TestAdoptRoundTrip(t *testing.T) {
	for _, in := range adoptInputs(t) {
		name := strings.TrimSuffix(filepath.Base(in), ".toml")
		t.Run(name, func(t *testing.T) {
			orig, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			before, err := containerdconfig.Parse(in, orig)
			if err != nil || !before.HasHandler("spin") {
				t.Fatalf("input must define spin: %v", err)
			}
			kept := bytes.Clone(orig)

			out, changed, err := containerdconfig.AddHandler(in, orig, spin)
			assertForeign(t, err, in)
			if out != nil || changed || !bytes.Equal(orig, kept) {
				t.Fatalf("AddHandler wrote something: changed=%v, %d bytes", changed, len(out))
			}

			adopted, changed, err := containerdconfig.AdoptHandler(in, orig, spin)
			if err != nil || !changed {
				t.Fatalf("adopt: changed=%v err=%v", changed, err)
			}
			golden(t, "adopt/golden/"+name+".toml", adopted)
			after, err := containerdconfig.Parse(in, adopted)
			if err != nil {
				t.Fatal(err)
			}
			if h := after.Handler("spin"); h["runtime_path"] != spin.RuntimePath || h["privileged_without_host_devices"] != true {
				t.Errorf("adopted handler as parsed: %v", h)
			}
			if after.Version != before.Version || !cmp.Equal(after.Handlers, before.Handlers) {
				t.Errorf("after adopt: version %d handlers %v", after.Version, after.Handlers)
			}
			for _, f := range []func(string, []byte, containerdconfig.RuntimeHandler) ([]byte, bool, error){containerdconfig.AddHandler, containerdconfig.AdoptHandler} {
				if again, changed, err := f(in, adopted, spin); err != nil || changed || !bytes.Equal(again, adopted) {
					t.Errorf("add or adopt again: changed=%v err=%v; want a no-op", changed, err)
				}
			}

			assertRemoveGivesBack(t, in, adopted, orig)

			// An update of the adopted handler keeps the original text.
			newer := spin
			newer.RuntimePath, newer.Options = "/opt/shimkit/bin/v2/containerd-shim-spin-v2", nil
			updated, changed, err := containerdconfig.AddHandler(in, adopted, newer)
			if err != nil || !changed {
				t.Fatalf("update: changed=%v err=%v", changed, err)
			}
			if c, _ := containerdconfig.Parse(in, updated); c.Handler("spin")["runtime_path"] != newer.RuntimePath {
				t.Errorf("update did not take: %v", c.Handler("spin"))
			}
			if back, _, err := containerdconfig.RemoveHandler(in, updated, "spin"); err != nil || !bytes.Equal(back, orig) {
				t.Errorf("update then remove is not the original (err %v):\n%s", err, cmp.Diff(string(orig), string(back)))
			}
		})
	}
}

// assertForeign checks the refusal of a handler shimkit did not write: a
// located *FileError wrapping ErrConflict.
func assertForeign(t *testing.T, err error, path string) {
	t.Helper()
	var fe *containerdconfig.FileError
	if !errors.Is(err, containerdconfig.ErrConflict) || !errors.As(err, &fe) {
		t.Fatalf("err = %v; want a *FileError wrapping ErrConflict", err)
	}
	if fe.Path != path || fe.Line == 0 || !strings.HasSuffix(fe.Key, ".spin") {
		t.Errorf("error at %s:%d key %q; want %s, a line and the handler's key", fe.Path, fe.Line, fe.Key, path)
	}
}

// TestAddRefusesIdenticalForeignHandler: a handler the user wrote with the
// very settings shimkit would write is still the user's.
func TestAddRefusesIdenticalForeignHandler(t *testing.T) {
	orig, err := os.ReadFile("testdata/edit/v2-default-containerd-1.7.toml")
	if err != nil {
		t.Fatal(err)
	}
	ours, _, err := containerdconfig.AddHandler("f", orig, spin)
	if err != nil {
		t.Fatal(err)
	}
	var user []byte // the same text without shimkit's markers
	for _, l := range bytes.SplitAfter(ours, []byte("\n")) {
		if !bytes.HasPrefix(l, []byte("# >>> shimkit")) && !bytes.HasPrefix(l, []byte("# <<< shimkit")) {
			user = append(user, l...)
		}
	}
	if _, _, err := containerdconfig.AddHandler("f", user, spin); true {
		assertForeign(t, err, "f")
	}
	adopted, changed, err := containerdconfig.AdoptHandler("f", user, spin)
	if err != nil || !changed {
		t.Fatalf("adopt: changed=%v err=%v", changed, err)
	}
	if back, _, err := containerdconfig.RemoveHandler("f", adopted, "spin"); err != nil || !bytes.Equal(back, user) {
		t.Errorf("adopt then remove: err %v\n%s", err, cmp.Diff(string(user), string(back)))
	}
}

// TestAdoptRefusesWhatItCannotPutBack: forms whose text cannot be kept and
// put back exactly are refused, located, and nothing is returned.
func TestAdoptRefusesWhatItCannotPutBack(t *testing.T) {
	const rt = `[plugins."io.containerd.grpc.v1.cri".containerd`
	tests := []struct {
		name string
		data string
		line int
	}{
		{"inline table", "version = 2\n" + rt + "]\n  runtimes = { spin = { runtime_type = \"io.containerd.old.v1\" } }\n", 3},
		{"dotted keys", "version = 2\n" + rt + ".runtimes]\n  spin.runtime_type = \"io.containerd.old.v1\"\n", 3},
		{"separate places", "version = 2\n" + rt + ".runtimes.spin]\n  runtime_type = \"io.containerd.old.v1\"\n[x]\n  y = 1\n" + rt + ".runtimes.spin.options]\n  Z = 2\n", 4},
		{"inside shimkit's runc block", "version = 2\n# >>> shimkit: default runtime \"runc\" (managed by shimkit; do not edit) >>>\n" + rt + ".runtimes.spin]\n  runtime_type = \"io.containerd.old.v1\"\n# <<< shimkit: default runtime \"runc\" <<<\n", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, changed, err := containerdconfig.AdoptHandler("f.toml", []byte(tt.data), spin)
			var fe *containerdconfig.FileError
			if !errors.Is(err, containerdconfig.ErrConflict) || !errors.As(err, &fe) || out != nil || changed {
				t.Fatalf("err = %v, changed %v; want ErrConflict and nothing", err, changed)
			}
			if fe.Path != "f.toml" || fe.Line != tt.line {
				t.Errorf("error at %s:%d, want f.toml:%d (%v)", fe.Path, fe.Line, tt.line, err)
			}
			if _, _, err := containerdconfig.AddHandler("f.toml", []byte(tt.data), spin); !errors.Is(err, containerdconfig.ErrConflict) {
				t.Errorf("AddHandler: err = %v, want ErrConflict", err)
			}
		})
	}
}

// TestAdoptWithoutHandlerIsAdd: on a file without the handler AdoptHandler
// is AddHandler.
func TestAdoptWithoutHandlerIsAdd(t *testing.T) {
	inputs, _ := filepath.Glob("testdata/edit/v[1-4]-default-*.toml")
	if len(inputs) == 0 {
		t.Fatal("no inputs")
	}
	for _, in := range inputs {
		orig, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		added, _, err1 := containerdconfig.AddHandler(in, orig, spin)
		adopted, _, err2 := containerdconfig.AdoptHandler(in, orig, spin)
		if err1 != nil || err2 != nil || !bytes.Equal(added, adopted) {
			t.Errorf("%s: add and adopt differ (%v, %v)", in, err1, err2)
		}
	}
}
