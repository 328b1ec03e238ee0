package migrate_test

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/shimkit/shimkit/internal/frontend/migrate"
	"github.com/shimkit/shimkit/internal/golden"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const testdata = "../../../operator/testdata/rcm"

// readRCM reads a runtime-class-manager Shim of testdata/rcm/shims.
func readRCM(t testing.TB, file string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testdata, "shims", file))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &u.Object); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return u
}

// TestConvertGolden: every runtime-class-manager Shim of testdata/rcm/shims
// (the project's own samples of both eras, and a few written for the
// tests) maps to the YAML of testdata/rcm/golden (go test -update rewrites
// them), or is skipped with the reason written there. A mapped Shim's YAML
// reads back, strictly, as the Shim.
func TestConvertGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testdata, "shims", "*.yaml"))
	if err != nil || len(files) < 8 {
		t.Fatalf("inputs %v %v", files, err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(strings.TrimSuffix(name, ".yaml"), func(t *testing.T) {
			u := readRCM(t, name)
			shim, notes, err := migrate.Convert(u)
			var got []byte
			if err != nil {
				if !errors.Is(err, migrate.ErrUnmappable) {
					t.Errorf("%v does not wrap ErrUnmappable", err)
				}
				got = []byte("# Skipped " + migrate.Source(u) + ": " + err.Error() + "\n")
			} else {
				if got, err = migrate.Render(migrate.Source(u), shim, notes); err != nil {
					t.Fatal(err)
				}
				back := &v1alpha1.Shim{}
				if err := yaml.UnmarshalStrict(got, back); err != nil || !reflect.DeepEqual(back, shim) {
					t.Errorf("the YAML does not read back as the Shim (%v):\n%#v\n%#v", err, back, shim)
				}
			}
			golden.Check(t, filepath.Join(testdata, "golden", name), got, *update)
		})
	}
}

// TestGoldenPlanShim: the operator's golden plans of a migration are of
// the Shims migrate maps runtime-class-manager's spin sample
// (operator/testdata/shims/migrate.yaml) and a Shim named without -v<N>
// (migrate-file.yaml) to.
func TestGoldenPlanShim(t *testing.T) {
	for from, to := range map[string]string{"spin-v2.yaml": "migrate.yaml", "wasmtime.yaml": "migrate-file.yaml"} {
		shim, _, err := migrate.Convert(readRCM(t, from))
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile("../../../operator/testdata/shims/" + to)
		if err != nil {
			t.Fatal(err)
		}
		s := &v1alpha1.Shim{}
		if err := yaml.UnmarshalStrict(data, s); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(s, shim) {
			t.Errorf("operator/testdata/shims/%s is not the mapped %s:\n%#v\n%#v", to, from, s, shim)
		}
	}
}

// TestRuntimeOptions: each value of containerdRuntimeOptions is read as
// the TOML value containerd read (runtime-class-manager wrote it
// unquoted); one without a JSON equivalent, or no TOML value at all, is
// refused.
func TestRuntimeOptions(t *testing.T) {
	for _, tt := range []struct {
		value string
		want  string // JSON, or "" for refused
	}{
		{"true", "true"},
		{"false", "false"},
		{"42", "42"},
		{"-7", "-7"},
		{"0x10", "16"},
		{"1_000", "1000"},
		{"0.25", "0.25"},
		{"1e3", "1000"},
		{`"systemd"`, `"systemd"`},
		{`'C:\path'`, `"C:\\path"`},
		{`["a", 1]`, `["a",1]`},
		{`{ a = 1, b = "x" }`, `{"a":1,"b":"x"}`},
		{"systemd", ""},      // unquoted: not TOML
		{"1979-05-27", ""},   // a date: no JSON equivalent
		{"inf", ""},          // no JSON equivalent
		{"1\nx = 2", ""},     // more than one line
		{"1 # comment", "1"}, // as containerd read it
		{"", ""},
	} {
		u := readRCM(t, "spin-v2.yaml")
		if err := unstructured.SetNestedStringMap(u.Object, map[string]string{"Opt": tt.value}, "spec", "containerdRuntimeOptions"); err != nil {
			t.Fatal(err)
		}
		shim, _, err := migrate.Convert(u)
		switch {
		case tt.want == "":
			if err == nil || !strings.Contains(err.Error(), "spec.containerdRuntimeOptions.Opt") {
				t.Errorf("%q: %v, want refused naming the option", tt.value, err)
			}
		case err != nil:
			t.Errorf("%q: %v", tt.value, err)
		default:
			if got := string(shim.Spec.RuntimeOptions.Raw); got != `{"Opt":`+tt.want+`}` {
				t.Errorf("%q: %s, want %s", tt.value, got, tt.want)
			}
		}
	}
}

// TestConvertRefuses: what cannot be mapped exactly is not mapped, with a
// reason naming the field.
func TestConvertRefuses(t *testing.T) {
	for _, tt := range []struct {
		name   string
		mutate func(u *unstructured.Unstructured)
		field  string
	}{
		{"a spec field this migration does not know", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "x", "spec", "newField")
		}, `unknown field "newField"`},
		{"handler is not the name", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "spin", "spec", "runtimeClass", "handler")
		}, "spec.runtimeClass.handler"},
		{"name runc", func(u *unstructured.Unstructured) {
			u.SetName("runc")
			_ = unstructured.SetNestedField(u.Object, "runc", "spec", "runtimeClass", "handler")
		}, "metadata.name"},
		{"arch riscv64", func(u *unstructured.Unstructured) {
			ps, _, _ := unstructured.NestedSlice(u.Object, "spec", "fetchStrategy", "platforms")
			ps[1].(map[string]any)["arch"] = "riscv64"
			_ = unstructured.SetNestedSlice(u.Object, ps, "spec", "fetchStrategy", "platforms")
		}, "spec.fetchStrategy.platforms[1]"},
		{"sha256 not hex", func(u *unstructured.Unstructured) {
			ps, _, _ := unstructured.NestedSlice(u.Object, "spec", "fetchStrategy", "platforms")
			ps[0].(map[string]any)["sha256"] = "abc"
			_ = unstructured.SetNestedSlice(u.Object, ps, "spec", "fetchStrategy", "platforms")
		}, "spec.fetchStrategy.platforms[0].sha256"},
		{"no artifact", func(u *unstructured.Unstructured) {
			unstructured.RemoveNestedField(u.Object, "spec", "fetchStrategy", "platforms")
		}, "spec.fetchStrategy"},
		{"unknown rollout", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "bluegreen", "spec", "rolloutStrategy", "type")
		}, "spec.rolloutStrategy.type"},
		{"option key that is no bare TOML key", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedStringMap(u.Object, map[string]string{"a.b": "1"}, "spec", "containerdRuntimeOptions")
		}, "spec.containerdRuntimeOptions.a.b"},
		{"not runtime-class-manager's", func(u *unstructured.Unstructured) { u.SetAPIVersion("example.com/v1alpha1") }, "not a runtime-class-manager Shim"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			u := readRCM(t, "spin-v2.yaml")
			tt.mutate(u)
			shim, _, err := migrate.Convert(u)
			if shim != nil || !errors.Is(err, migrate.ErrUnmappable) || !strings.Contains(err.Error(), tt.field) {
				t.Errorf("%v (Shim %v), want ErrUnmappable naming %s", err, shim != nil, tt.field)
			}
		})
	}
}
