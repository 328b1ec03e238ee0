package operator_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestPlanValidForEveryAcceptedShim: whatever the API server accepts, the
// operator turns into a plan that plan.Validate (the installer's check)
// accepts too, on nodes of either platform. The cases push every field to
// its edges; those the API server rejects are skipped, so the test holds
// the CRD's validation and plan.Validate to the same line. The one check
// CEL cannot make (runtimeOptions.BinaryName of a reserved runtime type)
// is the operator's: the cases named "operator refuses: ..." must get
// ErrReserved, and no other case.
func TestPlanValidForEveryAcceptedShim(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	cases := map[string]func(*v1alpha1.Shim){}
	for _, name := range []string{"plain", "gvisor", "kata", "sandboxer", "platforms", "oci", "runc-binaryname", "adopt"} {
		base := readShim(t, name)
		cases["testdata "+name] = func(s *v1alpha1.Shim) { s.Spec = base.Spec }
	}
	for name, mutate := range edgeCases() {
		cases[name] = mutate
	}
	accepted := 0
	i := 0
	for name, mutate := range cases {
		i++
		s := readShim(t, "plain")
		s.UID = ""
		s.Name = fmt.Sprintf("edge-%d", i)
		mutate(s)
		if err := env.Client.Create(ctx, s); err != nil {
			t.Logf("%s: rejected by the API server: %v", name, firstLine(err))
			continue
		}
		accepted++
		got := &v1alpha1.Shim{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(s), got); err != nil {
			t.Fatal(err)
		}
		refused := strings.HasPrefix(name, "operator refuses: ")
		for _, arch := range []string{"amd64", "arm64"} {
			for _, op := range []plan.Operation{plan.OpInstall, plan.OpUninstall} {
				_, err := operator.BuildPlan(got, nodeOf("node-"+arch, arch), op, operator.Options{})
				switch {
				case refused && op == plan.OpInstall:
					if !errors.Is(err, operator.ErrReserved) {
						t.Errorf("%s: %s plan for %s: %v, want ErrReserved", name, op, arch, err)
					}
				case err != nil && !errors.Is(err, operator.ErrNoArtifact):
					t.Errorf("%s: accepted by the API server, but %s plan for %s: %v", name, op, arch, err)
				}
			}
		}
	}
	if accepted < len(cases)/2 {
		t.Errorf("only %d of %d cases accepted: the cases no longer reach the edges", accepted, len(cases))
	}
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// edgeCases change one part of a plain Shim to the edge of what its
// schema allows (or just beyond).
func edgeCases() map[string]func(*v1alpha1.Shim) {
	long := func(n int) string { return strings.Repeat("a", n) }
	files := func(fs ...v1alpha1.BundleFile) func(*v1alpha1.Shim) {
		return func(s *v1alpha1.Shim) { s.Spec.Files = fs }
	}
	sandboxer := func(sb v1alpha1.SandboxerSpec) func(*v1alpha1.Shim) {
		return func(s *v1alpha1.Shim) { s.Spec.Sandboxers = []v1alpha1.SandboxerSpec{sb} }
	}
	options := func(raw string) func(*v1alpha1.Shim) {
		return func(s *v1alpha1.Shim) { s.Spec.RuntimeOptions = &runtime.RawExtension{Raw: []byte(raw)} }
	}
	out := map[string]func(*v1alpha1.Shim){
		"longest handler":             func(s *v1alpha1.Shim) { s.Spec.RuntimeClass.Handler = long(63) },
		"longest shim name":           func(s *v1alpha1.Shim) { s.Name = long(63) + "." + long(63) + "." + long(63) + "." + long(61) },
		"runtime type v0":             func(s *v1alpha1.Shim) { s.Spec.RuntimeType = "io.containerd.a_b-c.v0" },
		"runtime path root":           func(s *v1alpha1.Shim) { s.Spec.RuntimePath = "/" },
		"runtime path in bundle":      func(s *v1alpha1.Shim) { s.Spec.RuntimePath = "$(BUNDLE_DIR)/bin/shim" },
		"runtime path bare bundle":    func(s *v1alpha1.Shim) { s.Spec.RuntimePath = "$(BUNDLE_DIR)" },
		"empty options":               options(`{}`),
		"big numbers":                 options(`{"big": 12345678901234567890, "small": -9223372036854775808, "f": 1e300, "list": [1, 2.5, "x", null], "null": null}`),
		"streaming sandboxer handler": func(s *v1alpha1.Shim) { s.Spec.IOType, s.Spec.Sandboxer = "streaming", "podsandbox" },
		"odd snapshotter":             func(s *v1alpha1.Shim) { s.Spec.Snapshotter = "my snapshotter" },
		"annotations":                 func(s *v1alpha1.Shim) { s.Spec.ContainerAnnotations = []string{"*", "a.b/*"} },
		"file pattern in a directory": files(v1alpha1.BundleFile{Path: "*/bin/runsc"}),
		"file deep path":              files(v1alpha1.BundleFile{Path: "a/b/c"}),
		"file three dots":             files(v1alpha1.BundleFile{Path: "...", Target: "a/.../b"}),
		"file target pattern":         files(v1alpha1.BundleFile{Path: "bin/*", Target: "containerd-shim-*"}),
		"file dot segment":            files(v1alpha1.BundleFile{Path: "./runsc"}),
		"file trailing slash":         files(v1alpha1.BundleFile{Path: "runsc/"}),
		"directory to a dot":          files(v1alpha1.BundleFile{Path: "bin/", Target: "./"}),
		"directory of a dot":          files(v1alpha1.BundleFile{Path: "./"}),
		"directory slash only":        files(v1alpha1.BundleFile{Path: "bin/", Target: "/"}),
		"directory with a backslash":  files(v1alpha1.BundleFile{Path: "bin\\x/"}),
		"directory beside its files":  files(v1alpha1.BundleFile{Path: "bin/"}, v1alpha1.BundleFile{Path: "x", Target: "bin/x"}),
		"content with a pattern path": files(v1alpha1.BundleFile{Path: "*.toml", Content: ptr.To("x")}),
		"content deep":                files(v1alpha1.BundleFile{Path: "etc/a/b.toml", Content: ptr.To("x"), Substitute: true}),
		"content beside a directory":  files(v1alpha1.BundleFile{Path: "etc/"}, v1alpha1.BundleFile{Path: "etc/x.toml", Content: ptr.To("x")}),
		"file target double slash":    files(v1alpha1.BundleFile{Path: "runsc", Target: "a//b"}),
		"file target dot":             files(v1alpha1.BundleFile{Path: "runsc", Target: "."}),
		"file question mark":          files(v1alpha1.BundleFile{Path: "?"}),
		"file backslash":              files(v1alpha1.BundleFile{Path: `a\b`}),
		"file mode zero":              files(v1alpha1.BundleFile{Path: "a", Mode: ptr.To[int32](0)}),
		"file mode 0777":              files(v1alpha1.BundleFile{Path: "a", Mode: ptr.To[int32](0o777)}),
		"file mode negative":          files(v1alpha1.BundleFile{Path: "a", Mode: ptr.To[int32](-1)}),
		"files swapping names":        files(v1alpha1.BundleFile{Path: "a", Target: "b"}, v1alpha1.BundleFile{Path: "b", Target: "a"}),
		"files one target by default": files(v1alpha1.BundleFile{Path: "x/y"}, v1alpha1.BundleFile{Path: "*/y", Target: "x/y"}),
		"files pattern base clash":    files(v1alpha1.BundleFile{Path: "y"}, v1alpha1.BundleFile{Path: "*/y"}),
		"sandboxer longest name":      sandboxer(v1alpha1.SandboxerSpec{Name: long(63), Command: []string{"/x"}}),
		"sandboxer longest address":   sandboxer(v1alpha1.SandboxerSpec{Name: "s", Command: []string{"$(BUNDLE_DIR)/x", "$(ADDRESS)"}, Address: "/" + long(106)}),
		"sandboxer address too long":  sandboxer(v1alpha1.SandboxerSpec{Name: "s", Command: []string{"/x"}, Address: "/" + long(107)}),
		"sandboxer empty env value":   sandboxer(v1alpha1.SandboxerSpec{Name: "s", Command: []string{"/"}, Env: []string{"A="}}),
		"sandboxer program address":   sandboxer(v1alpha1.SandboxerSpec{Name: "s", Command: []string{"$(ADDRESS)"}}),
		"sandboxer uppercase name":    sandboxer(v1alpha1.SandboxerSpec{Name: "S", Command: []string{"/x"}}),
		"runc shim with BinaryName": func(s *v1alpha1.Shim) {
			s.Spec.RuntimeType = "io.containerd.runc.v1"
			options(`{"BinaryName": "$(BUNDLE_DIR)/crun"}`)(s)
		},
		"operator refuses: runc shim without BinaryName": func(s *v1alpha1.Shim) {
			s.Spec.RuntimeType = "io.containerd.runc.v2"
			options(`{"SystemdCgroup": true}`)(s)
		},
		"operator refuses: runc shim with an empty BinaryName": func(s *v1alpha1.Shim) {
			s.Spec.RuntimeType = "io.containerd.runc.v2"
			options(`{"BinaryName": ""}`)(s)
		},
		"operator refuses: extra handler of runhcs with BinaryName not a string": func(s *v1alpha1.Shim) {
			s.Spec.Handlers = []v1alpha1.HandlerSpec{{RuntimeClass: v1alpha1.RuntimeClassSpec{Name: "w", Handler: "w"}, RuntimeType: "io.containerd.runhcs.v1",
				RuntimeOptions: &runtime.RawExtension{Raw: []byte(`{"BinaryName": 1}`)}}}
		},
		"adopted handlers": func(s *v1alpha1.Shim) {
			s.Spec.RuntimeClass.AdoptHandler = true
			s.Spec.Handlers = []v1alpha1.HandlerSpec{{RuntimeClass: v1alpha1.RuntimeClassSpec{Name: "w", Handler: "w", AdoptHandler: true}}}
		},
	}
	for _, n := range []int{1, 16, 17} {
		out[fmt.Sprintf("%d extra handlers", n)] = func(s *v1alpha1.Shim) {
			for i := range n {
				h := v1alpha1.HandlerSpec{RuntimeClass: v1alpha1.RuntimeClassSpec{Name: fmt.Sprintf("rc-%d", i), Handler: fmt.Sprintf("h-%d", i)}}
				if i%2 == 1 {
					h.RuntimeType, h.RuntimePath, h.IOType = "io.containerd.other.v2", "$(BUNDLE_DIR)/x", "fifo"
				}
				s.Spec.Handlers = append(s.Spec.Handlers, h)
			}
		}
	}
	out["32 files"] = func(s *v1alpha1.Shim) {
		for i := range 32 {
			s.Spec.Files = append(s.Spec.Files, v1alpha1.BundleFile{Path: filepath.Join("d", fmt.Sprint(i))})
		}
	}
	return out
}
