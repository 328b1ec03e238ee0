package v1alpha1_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

func validShim(name string) *v1alpha1.Shim {
	return &v1alpha1.Shim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ShimSpec{
			FetchStrategy: v1alpha1.FetchStrategy{
				Type:     v1alpha1.FetchAnonHTTP,
				AnonHTTP: &v1alpha1.AnonHTTPFetch{Location: "https://example.invalid/spin.tar.gz", SHA256: strings.Repeat("a", 64)},
			},
			RuntimeClass: v1alpha1.RuntimeClassSpec{Name: "wasmtime-spin", Handler: "spin"},
		},
	}
}

func handler(runtimeClass, name string) v1alpha1.HandlerSpec {
	return v1alpha1.HandlerSpec{RuntimeClass: v1alpha1.RuntimeClassSpec{Name: runtimeClass, Handler: name}}
}

// bundleShims are the Shims of the operator's golden plans and the samples:
// gVisor (runsc, its shim, runsc.toml with substitute), Kata with two
// extra handlers, a sandboxer Shim, a BinaryName runtime, and the plain
// Shims of before.
func bundleShims(t *testing.T) []*v1alpha1.Shim {
	t.Helper()
	var files []string
	for _, glob := range []string{"../../testdata/shims/*.yaml", "../../config/samples/shim_*.yaml"} {
		m, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 8 {
		t.Fatalf("only %d Shim files: %v", len(files), files)
	}
	var out []*v1alpha1.Shim
	for i, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := &v1alpha1.Shim{}
		if err := yaml.UnmarshalStrict(data, s); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		s.UID = ""
		s.Name = fmt.Sprintf("bundle-%d-%s", i, s.Name)
		out = append(out, s)
	}
	return out
}

func migrateFrom(shim, group string) *v1alpha1.MigrateFrom {
	return &v1alpha1.MigrateFrom{RuntimeClassManager: v1alpha1.RuntimeClassManagerShim{Shim: shim, APIGroup: group}}
}

func intOrString(s string) *intstr.IntOrString {
	v := intstr.Parse(s)
	return &v
}

// TestAdmission proves every validation rule of the CRD against a real API
// server: each bad spec is rejected with a message naming the field, and
// good specs are accepted with their defaults.
//
// On each release the tests run: the oldest supported and the newest.
func TestAdmission(t *testing.T) {
	for _, rel := range testutil.KubeReleases() {
		t.Run(rel, func(t *testing.T) { testAdmission(t, testutil.StartEnvOf(t, rel, nil, v1alpha1.AddToScheme)) })
	}
}

func testAdmission(t *testing.T, env *testutil.Env) {
	ctx := context.Background()

	bad := []struct {
		name   string
		mutate func(*v1alpha1.Shim)
		want   string // in the error
	}{
		{"anonHttp type without anonHttp", func(s *v1alpha1.Shim) { s.Spec.FetchStrategy.AnonHTTP = nil }, "fetchStrategy: set exactly the one of anonHttp, oci and image"},
		{"both anonHttp and oci", func(s *v1alpha1.Shim) {
			s.Spec.FetchStrategy.OCI = &v1alpha1.OCIFetch{Reference: "registry.invalid/shims/spin:v1"}
		}, "fetchStrategy: set exactly the one of anonHttp, oci and image"},
		{"oci type with anonHttp", func(s *v1alpha1.Shim) { s.Spec.FetchStrategy.Type = v1alpha1.FetchOCI }, "fetchStrategy: set exactly the one of anonHttp, oci and image"},
		{"image type with anonHttp", func(s *v1alpha1.Shim) { s.Spec.FetchStrategy.Type = v1alpha1.FetchImage }, "fetchStrategy: set exactly the one of anonHttp, oci and image"},
		{"image type with image and anonHttp", func(s *v1alpha1.Shim) {
			s.Spec.FetchStrategy.Type = v1alpha1.FetchImage
			s.Spec.FetchStrategy.Image = &v1alpha1.OCIFetch{Reference: "registry.invalid/shims/spin:v1"}
		}, "fetchStrategy: set exactly the one of anonHttp, oci and image"},
		{"an image by a bad reference", func(s *v1alpha1.Shim) {
			s.Spec.FetchStrategy = v1alpha1.FetchStrategy{Type: v1alpha1.FetchImage, Image: &v1alpha1.OCIFetch{Reference: "spin"}}
		}, "spec.fetchStrategy.image.reference"},
		{"unknown fetch type", func(s *v1alpha1.Shim) { s.Spec.FetchStrategy.Type = "ftp" }, "spec.fetchStrategy.type"},
		{"scheduling label without a domain", func(s *v1alpha1.Shim) { s.Spec.SchedulingLabel = "kata" }, "schedulingLabel: a label key with a DNS subdomain prefix"},
		{"scheduling label with a bad name", func(s *v1alpha1.Shim) { s.Spec.SchedulingLabel = "example.com/-kata" }, "schedulingLabel: a label key with a DNS subdomain prefix"},
		{"scheduling label name too long", func(s *v1alpha1.Shim) { s.Spec.SchedulingLabel = "example.com/" + strings.Repeat("k", 64) }, "the name after the / at most 63 characters"},
		{"scheduling label in shimkit's domain", func(s *v1alpha1.Shim) { s.Spec.SchedulingLabel = "shim.containerd.x-k8s.io/kata" }, "the shim.containerd.x-k8s.io/ prefix is shimkit's own"},
		// preinstalled: the node image has the shim, so nothing to fetch.
		{"preinstalled type with anonHttp", func(s *v1alpha1.Shim) { s.Spec.FetchStrategy.Type = v1alpha1.FetchPreinstalled }, "fetchStrategy: set exactly the one of anonHttp, oci and image that type names (none for preinstalled)"},
		{"preinstalled type with oci", func(s *v1alpha1.Shim) {
			s.Spec.FetchStrategy = v1alpha1.FetchStrategy{Type: v1alpha1.FetchPreinstalled, OCI: &v1alpha1.OCIFetch{Reference: "registry.invalid/shims/spin:v1"}}
		}, "(none for preinstalled)"},
		{"preinstalled type with image", func(s *v1alpha1.Shim) {
			s.Spec.FetchStrategy = v1alpha1.FetchStrategy{Type: v1alpha1.FetchPreinstalled, Image: &v1alpha1.OCIFetch{Reference: "registry.invalid/shims/spin:v1"}}
		}, "(none for preinstalled)"},
		{"preinstalled type with image and oci", func(s *v1alpha1.Shim) {
			s.Spec.FetchStrategy = v1alpha1.FetchStrategy{Type: v1alpha1.FetchPreinstalled, OCI: &v1alpha1.OCIFetch{Reference: "registry.invalid/shims/spin:v1"}, Image: &v1alpha1.OCIFetch{Reference: "registry.invalid/shims/spin:v1"}}
		}, "(none for preinstalled)"},
		{"Preinstalled, capitalized", func(s *v1alpha1.Shim) { s.Spec.FetchStrategy = v1alpha1.FetchStrategy{Type: "Preinstalled"} }, "spec.fetchStrategy.type"},
		{"location not http", func(s *v1alpha1.Shim) { s.Spec.FetchStrategy.AnonHTTP.Location = "file:///etc/passwd" }, "spec.fetchStrategy.anonHttp.location"},
		{"no location and no platforms", func(s *v1alpha1.Shim) { s.Spec.FetchStrategy.AnonHTTP.Location = "" }, "fetchStrategy.anonHttp: set location, or platforms"},
		{"sha256 not hex", func(s *v1alpha1.Shim) { s.Spec.FetchStrategy.AnonHTTP.SHA256 = "abc" }, "spec.fetchStrategy.anonHttp.sha256"},
		{"unknown platform", func(s *v1alpha1.Shim) {
			s.Spec.FetchStrategy.AnonHTTP.Platforms = []v1alpha1.PlatformArtifact{{Platform: "linux/riscv64", Location: "https://x.invalid/a"}}
		}, "spec.fetchStrategy.anonHttp.platforms[0].platform"},
		{"platform twice", func(s *v1alpha1.Shim) {
			p := v1alpha1.PlatformArtifact{Platform: "linux/arm64", Location: "https://x.invalid/a"}
			s.Spec.FetchStrategy.AnonHTTP.Platforms = []v1alpha1.PlatformArtifact{p, p}
		}, "fetchStrategy.anonHttp.platforms: each platform at most once"},
		{"oci reference malformed", func(s *v1alpha1.Shim) {
			s.Spec.FetchStrategy = v1alpha1.FetchStrategy{Type: v1alpha1.FetchOCI, OCI: &v1alpha1.OCIFetch{Reference: "not a reference"}}
		}, "spec.fetchStrategy.oci.reference"},
		{"handler not a DNS label", func(s *v1alpha1.Shim) { s.Spec.RuntimeClass.Handler = "Spin_V2" }, "spec.runtimeClass.handler"},
		{"handler too long", func(s *v1alpha1.Shim) { s.Spec.RuntimeClass.Handler = strings.Repeat("a", 64) }, "spec.runtimeClass.handler"},
		{"runtime class name invalid", func(s *v1alpha1.Shim) { s.Spec.RuntimeClass.Name = "Wasm Time" }, "spec.runtimeClass.name"},
		{"runtime type malformed", func(s *v1alpha1.Shim) { s.Spec.RuntimeType = "spin" }, "spec.runtimeType"},
		{"runtime path relative", func(s *v1alpha1.Shim) { s.Spec.RuntimePath = "bin/shim" }, "spec.runtimePath"},
		{"toleration effect unknown", func(s *v1alpha1.Shim) {
			s.Spec.RuntimeClass.Tolerations = []v1alpha1.Toleration{{Key: "k", Effect: "Sometimes"}}
		}, "spec.runtimeClass.tolerations[0].effect"},
		{"maxUpdate zero", func(s *v1alpha1.Shim) {
			s.Spec.RolloutStrategy = &v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutRolling, Rolling: &v1alpha1.RollingUpdate{MaxUpdate: intOrString("0")}}
		}, "rolloutStrategy.rolling.maxUpdate: a count of at least 1"},
		{"maxUpdate 0%", func(s *v1alpha1.Shim) {
			s.Spec.RolloutStrategy = &v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutRolling, Rolling: &v1alpha1.RollingUpdate{MaxUpdate: intOrString("0%")}}
		}, "rolloutStrategy.rolling.maxUpdate"},
		{"maxUpdate 150%", func(s *v1alpha1.Shim) {
			s.Spec.RolloutStrategy = &v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutRolling, Rolling: &v1alpha1.RollingUpdate{MaxUpdate: intOrString("150%")}}
		}, "rolloutStrategy.rolling.maxUpdate"},
		{"maxUpdate words", func(s *v1alpha1.Shim) {
			s.Spec.RolloutStrategy = &v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutRolling, Rolling: &v1alpha1.RollingUpdate{MaxUpdate: intOrString("half")}}
		}, "rolloutStrategy.rolling.maxUpdate"},
		{"rolling settings with recreate", func(s *v1alpha1.Shim) {
			s.Spec.RolloutStrategy = &v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutRecreate, Rolling: &v1alpha1.RollingUpdate{MaxUpdate: intOrString("2")}}
		}, "rolloutStrategy.rolling is only for type rolling"},
		{"unknown rollout type", func(s *v1alpha1.Shim) { s.Spec.RolloutStrategy = &v1alpha1.RolloutStrategy{Type: "bluegreen"} }, "spec.rolloutStrategy.type"},
		{"runtime path under a made-up placeholder", func(s *v1alpha1.Shim) { s.Spec.RuntimePath = "$(HOME)/shim" }, "spec.runtimePath"},
		{"io type unknown", func(s *v1alpha1.Shim) { s.Spec.IOType = "pipe" }, "spec.ioType"},
		{"duplicate handler", func(s *v1alpha1.Shim) {
			s.Spec.Handlers = []v1alpha1.HandlerSpec{handler("kata-qemu", "kata-qemu"), handler("kata-qemu-2", "kata-qemu")}
		}, "handlers: each runtimeClass.handler at most once"},
		{"duplicate handler RuntimeClass", func(s *v1alpha1.Shim) {
			s.Spec.Handlers = []v1alpha1.HandlerSpec{handler("kata", "kata-qemu"), handler("kata", "kata-clh")}
		}, "handlers: each runtimeClass.name at most once"},
		{"extra handler repeats the primary's handler", func(s *v1alpha1.Shim) {
			s.Spec.Handlers = []v1alpha1.HandlerSpec{handler("other", "spin")}
		}, "handlers: a runtimeClass.handler or runtimeClass.name repeats spec.runtimeClass"},
		{"extra handler repeats the primary's RuntimeClass", func(s *v1alpha1.Shim) {
			s.Spec.Handlers = []v1alpha1.HandlerSpec{handler("wasmtime-spin", "other")}
		}, "handlers: a runtimeClass.handler or runtimeClass.name repeats spec.runtimeClass"},
		{"extra handler runtime type malformed", func(s *v1alpha1.Shim) {
			h := handler("b", "b")
			h.RuntimeType = "runc"
			s.Spec.Handlers = []v1alpha1.HandlerSpec{h}
		}, "spec.handlers[0].runtimeType"},
		{"file target with ..", func(s *v1alpha1.Shim) {
			s.Spec.Files = []v1alpha1.BundleFile{{Path: "runsc", Target: "../../usr/bin/runsc"}}
		}, "files.target: a clean relative path inside the bundle"},
		{"file target absolute", func(s *v1alpha1.Shim) {
			s.Spec.Files = []v1alpha1.BundleFile{{Path: "runsc", Target: "/usr/bin/runsc"}}
		}, "spec.files[0].target"},
		{"file path with ..", func(s *v1alpha1.Shim) { s.Spec.Files = []v1alpha1.BundleFile{{Path: "bin/../../runsc"}} }, "files.path: a clean relative path in the artifact"},
		{"file path with a character class", func(s *v1alpha1.Shim) { s.Spec.Files = []v1alpha1.BundleFile{{Path: "bin/runs[c", Target: "runsc"}} }, "spec.files[0].path"},
		{"file pattern without a target", func(s *v1alpha1.Shim) { s.Spec.Files = []v1alpha1.BundleFile{{Path: "bin/containerd-shim-*"}} }, "files.target: required when the base name of path is a pattern"},
		{"two files, one target", func(s *v1alpha1.Shim) {
			s.Spec.Files = []v1alpha1.BundleFile{{Path: "a/runsc", Target: "runsc"}, {Path: "*/runsc"}}
		}, "files: each target"},
		{"file mode above 0777", func(s *v1alpha1.Shim) {
			s.Spec.Files = []v1alpha1.BundleFile{{Path: "runsc", Mode: ptr.To[int32](0o4755)}}
		}, "spec.files[0].mode"},
		{"a directory pattern", func(s *v1alpha1.Shim) {
			s.Spec.Files = []v1alpha1.BundleFile{{Path: "gvisor-*/", Target: "gvisor-bin/"}}
		}, "files.path: a directory (ending in /) is not a pattern"},
		{"a directory to a file", func(s *v1alpha1.Shim) {
			s.Spec.Files = []v1alpha1.BundleFile{{Path: "gvisor-bin/", Target: "sidecars"}}
		}, "files.target: a directory (ending in /) when path is one"},
		{"a file to a directory", func(s *v1alpha1.Shim) { s.Spec.Files = []v1alpha1.BundleFile{{Path: "runsc", Target: "bin/"}} }, "files.target: a directory (ending in /) when path is one"},
		{"a directory path with ..", func(s *v1alpha1.Shim) { s.Spec.Files = []v1alpha1.BundleFile{{Path: "bin/../../"}} }, "files.path: a clean relative path in the artifact"},
		{"a directory path ending in //", func(s *v1alpha1.Shim) { s.Spec.Files = []v1alpha1.BundleFile{{Path: "bin//"}} }, "files.path: a clean relative path in the artifact"},
		{"content with a target", func(s *v1alpha1.Shim) {
			s.Spec.Files = []v1alpha1.BundleFile{{Path: "runsc.toml", Target: "etc/runsc.toml", Content: ptr.To("x")}}
		}, "files.content: path is then the file's place in the bundle"},
		{"content at a directory", func(s *v1alpha1.Shim) { s.Spec.Files = []v1alpha1.BundleFile{{Path: "etc/", Content: ptr.To("x")}} }, "files.content: path is then the file's place in the bundle"},
		{"content over 32 KiB", func(s *v1alpha1.Shim) {
			s.Spec.Files = []v1alpha1.BundleFile{{Path: "runsc.toml", Content: ptr.To(strings.Repeat("x", 32769))}}
		}, "spec.files[0].content"},
		{"a file inside a directory's target", func(s *v1alpha1.Shim) {
			s.Spec.Files = []v1alpha1.BundleFile{{Path: "gvisor-bin/"}, {Path: "sentry", Target: "gvisor-bin/gvisor_sentry"}}
		}, "files: nothing else goes into a directory's target"},
		{"a file where a directory goes", func(s *v1alpha1.Shim) {
			s.Spec.Files = []v1alpha1.BundleFile{{Path: "release/gvisor-bin/", Target: "sidecars/"}, {Path: "sidecars"}}
		}, "files: nothing else goes into a directory's target"},
		{"a directory inside a directory", func(s *v1alpha1.Shim) {
			s.Spec.Files = []v1alpha1.BundleFile{{Path: "bin/"}, {Path: "lib/", Target: "bin/lib/"}}
		}, "files: nothing else goes into a directory's target"},
		{"sandboxer command not absolute", func(s *v1alpha1.Shim) {
			s.Spec.Sandboxers = []v1alpha1.SandboxerSpec{{Name: "vmm", Command: []string{"vmm-sandboxer", "--listen", "$(ADDRESS)"}}}
		}, "sandboxers.command: the program must be an absolute path or under $(BUNDLE_DIR)"},
		{"sandboxer without command", func(s *v1alpha1.Shim) {
			s.Spec.Sandboxers = []v1alpha1.SandboxerSpec{{Name: "vmm"}}
		}, "spec.sandboxers[0].command"},
		{"sandboxer address relative", func(s *v1alpha1.Shim) {
			s.Spec.Sandboxers = []v1alpha1.SandboxerSpec{{Name: "vmm", Command: []string{"/bin/vmm"}, Address: "run/vmm.sock"}}
		}, "spec.sandboxers[0].address"},
		{"sandboxer env not NAME=value", func(s *v1alpha1.Shim) {
			s.Spec.Sandboxers = []v1alpha1.SandboxerSpec{{Name: "vmm", Command: []string{"/bin/vmm"}, Env: []string{"1X=2"}}}
		}, "spec.sandboxers[0].env[0]"},
		{"primary handler runc", func(s *v1alpha1.Shim) { s.Spec.RuntimeClass.Handler = "runc" }, "spec.runtimeClass.handler: Forbidden: runc is containerd's own handler"},
		{"primary handler runc, adopted", func(s *v1alpha1.Shim) {
			s.Spec.RuntimeClass.Handler, s.Spec.RuntimeClass.AdoptHandler = "runc", true
		}, "spec.runtimeClass.handler: Forbidden: runc is containerd's own handler: a Shim can neither register nor adopt it"},
		{"no handler, RuntimeClass name with a dot", func(s *v1alpha1.Shim) {
			s.Spec.RuntimeClass = v1alpha1.RuntimeClassSpec{Name: "wasmtime.spin"}
		}, "runtimeClass.handler is not set, and runtimeClass.name wasmtime.spin cannot stand for it"},
		{"no handler, RuntimeClass name runc", func(s *v1alpha1.Shim) {
			s.Spec.RuntimeClass = v1alpha1.RuntimeClassSpec{Name: "runc"}
		}, "runtimeClass.name runc cannot stand for it"},
		{"no handler on an extra handler, name too long for one", func(s *v1alpha1.Shim) {
			s.Spec.Handlers = []v1alpha1.HandlerSpec{{RuntimeClass: v1alpha1.RuntimeClassSpec{Name: strings.Repeat("k", 64)}}}
		}, "spec.handlers[0].runtimeClass: Required value: runtimeClass.handler is not set"},
		{"extra handler defaults to the primary's handler", func(s *v1alpha1.Shim) {
			s.Spec.RuntimeClass = v1alpha1.RuntimeClassSpec{Name: "spin"}
			s.Spec.Handlers = []v1alpha1.HandlerSpec{handler("spin-2", "spin")}
		}, "handlers: a runtimeClass.handler or runtimeClass.name repeats spec.runtimeClass"},
		{"extra handler runc", func(s *v1alpha1.Shim) {
			s.Spec.Handlers = []v1alpha1.HandlerSpec{handler("mine", "runc")}
		}, "spec.handlers[0].runtimeClass.handler: Forbidden: runc is containerd's own handler"},
		{"migrateFrom a Shim that is not the handler", func(s *v1alpha1.Shim) {
			s.Spec.MigrateFrom = migrateFrom("spin-v2", "")
		}, "spec.migrateFrom.runtimeClassManager.shim: Invalid value: runtime-class-manager registered the containerd handler under the name of its Shim, spin-v2, and pods of its RuntimeClass ask for that handler: set runtimeClass.handler to spin-v2"},
		{"migrateFrom a Shim that is not the defaulted handler", func(s *v1alpha1.Shim) {
			s.Spec.RuntimeClass = v1alpha1.RuntimeClassSpec{Name: "wasmtime-spin-v2"}
			s.Spec.MigrateFrom = migrateFrom("spin-v2", "")
		}, "set runtimeClass.handler to spin-v2"},
		{"migrateFrom an unknown group", func(s *v1alpha1.Shim) {
			s.Spec.MigrateFrom = migrateFrom("spin", "runtime.example.com")
		}, "spec.migrateFrom.runtimeClassManager.apiGroup"},
		{"migrateFrom a Shim name that is no handler", func(s *v1alpha1.Shim) {
			s.Spec.RuntimeClass.Handler = ""
			s.Spec.RuntimeClass.Name = "spin.v2"
			s.Spec.MigrateFrom = migrateFrom("spin.v2", "")
		}, "spec.migrateFrom.runtimeClassManager.shim"},
		{"migrateFrom without a Shim", func(s *v1alpha1.Shim) {
			s.Spec.MigrateFrom = &v1alpha1.MigrateFrom{}
		}, "spec.migrateFrom.runtimeClassManager.shim"},
	}
	for _, rt := range v1alpha1.ReservedRuntimeTypes() {
		const msg = "are containerd's own shims; a Shim may name one only to run its bundle's OCI runtime through containerd's shim: set runtimeOptions.BinaryName, and no runtimePath"
		bad = append(bad, []struct {
			name   string
			mutate func(*v1alpha1.Shim)
			want   string
		}{
			{"runtimeType " + rt + " without options", func(s *v1alpha1.Shim) { s.Spec.RuntimeType = rt }, "spec.runtimeType: Forbidden: runtimeType: io.containerd.runc.v1, io.containerd.runc.v2 and io.containerd.runhcs.v1 " + msg},
			{"runtimeType " + rt + " with a runtimePath", func(s *v1alpha1.Shim) {
				s.Spec.RuntimeType, s.Spec.RuntimePath = rt, "$(BUNDLE_DIR)/containerd-shim-runc-v2"
				s.Spec.RuntimeOptions = &runtime.RawExtension{Raw: []byte(`{"BinaryName":"$(BUNDLE_DIR)/crun"}`)}
			}, "spec.runtimeType: Forbidden"},
			{"extra handler runtimeType " + rt + " without options", func(s *v1alpha1.Shim) {
				h := handler("b", "b")
				h.RuntimeType = rt
				s.Spec.Handlers = []v1alpha1.HandlerSpec{h}
			}, "spec.handlers[0].runtimeType: Forbidden: runtimeType: io.containerd.runc.v1"},
			{"extra handler runtimeType " + rt + " with a runtimePath", func(s *v1alpha1.Shim) {
				h := handler("b", "b")
				h.RuntimeType, h.RuntimePath = rt, "/usr/local/bin/containerd-shim-runc-v2"
				h.RuntimeOptions = &runtime.RawExtension{Raw: []byte(`{"BinaryName":"$(BUNDLE_DIR)/crun"}`)}
				s.Spec.Handlers = []v1alpha1.HandlerSpec{h}
			}, "spec.handlers[0].runtimeType: Forbidden"},
		}...)
	}
	for i, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			s := validShim(fmt.Sprintf("bad-%d", i))
			tt.mutate(s)
			err := env.Client.Create(ctx, s)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error does not name %q:\n%v", tt.want, err)
			}
		})
	}

	t.Run("defaults", func(t *testing.T) {
		s := validShim("defaults")
		if err := env.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		rs := s.Spec.RolloutStrategy
		if rs == nil || rs.Type != v1alpha1.RolloutRolling || rs.Rolling == nil || rs.Rolling.MaxUpdate.IntValue() != 1 {
			t.Errorf("default rollout strategy = %+v", rs)
		}
	})
	t.Run("good specs", func(t *testing.T) {
		for i, mutate := range []func(*v1alpha1.Shim){
			func(s *v1alpha1.Shim) {
				s.Spec.RolloutStrategy = &v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutRolling, Rolling: &v1alpha1.RollingUpdate{MaxUpdate: intOrString("10%")}}
			},
			func(s *v1alpha1.Shim) {
				s.Spec.RolloutStrategy = &v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutRecreate}
			},
			func(s *v1alpha1.Shim) {
				s.Spec.FetchStrategy = v1alpha1.FetchStrategy{Type: v1alpha1.FetchOCI, OCI: &v1alpha1.OCIFetch{
					Reference: "registry.invalid:5000/shims/spin@sha256:" + strings.Repeat("b", 64), PullSecretRef: &v1alpha1.SecretReference{Name: "pull"}, PlainHTTP: true,
				}}
			},
			func(s *v1alpha1.Shim) {
				s.Spec.FetchStrategy = v1alpha1.FetchStrategy{Type: v1alpha1.FetchImage, Image: &v1alpha1.OCIFetch{Reference: "shims.example.invalid/spin@sha256:" + strings.Repeat("c", 64)}}
			},
			// The node image has the shim: nothing to fetch, for every
			// matching node, with extra handlers, or beside
			// preinstalledOn (which it makes redundant).
			func(s *v1alpha1.Shim) {
				s.Spec.FetchStrategy = v1alpha1.FetchStrategy{Type: v1alpha1.FetchPreinstalled}
			},
			func(s *v1alpha1.Shim) {
				s.Spec.FetchStrategy = v1alpha1.FetchStrategy{Type: v1alpha1.FetchPreinstalled}
				s.Spec.NodeSelector = map[string]string{"image.example.com/wasm": "yes"}
				s.Spec.Handlers = []v1alpha1.HandlerSpec{handler("spin-b", "spin-b")}
			},
			func(s *v1alpha1.Shim) {
				s.Spec.FetchStrategy = v1alpha1.FetchStrategy{Type: v1alpha1.FetchPreinstalled}
				s.Spec.PreinstalledOn = map[string]string{"image.example.com/wasm": "yes"}
			},
			func(s *v1alpha1.Shim) {
				s.Spec.FetchStrategy.AnonHTTP = &v1alpha1.AnonHTTPFetch{Platforms: []v1alpha1.PlatformArtifact{
					{Platform: "linux/amd64", Location: "https://x.invalid/amd64.tgz"}, {Platform: "linux/arm64", Location: "https://x.invalid/arm64.tgz"},
				}}
				s.Spec.RuntimeOptions = &runtime.RawExtension{Raw: []byte(`{"SystemdCgroup":true,"Nested":{"n":1}}`)}
				s.Spec.NodeSelector = map[string]string{"wasm": "true"}
			},
			// containerd's runc shim running the bundle's OCI runtime.
			func(s *v1alpha1.Shim) {
				s.Spec.RuntimeType = "io.containerd.runc.v2"
				s.Spec.RuntimeOptions = &runtime.RawExtension{Raw: []byte(`{"BinaryName":"$(BUNDLE_DIR)/crun","SystemdCgroup":true}`)}
				h := handler("crun-b", "crun-b")
				h.RuntimeType, h.RuntimeOptions = "io.containerd.runc.v2", s.Spec.RuntimeOptions
				s.Spec.Handlers = []v1alpha1.HandlerSpec{h}
			},
			// Adoption of an existing handler, per handler.
			func(s *v1alpha1.Shim) {
				s.Spec.RuntimeClass.AdoptHandler = true
				h := handler("kata-qemu", "kata-qemu")
				h.RuntimeClass.AdoptHandler = true
				s.Spec.Handlers = []v1alpha1.HandlerSpec{h}
			},
			// gVisor's release: a directory of sidecars and a written
			// runsc.toml, beside files of the artifact.
			func(s *v1alpha1.Shim) {
				s.Spec.Files = []v1alpha1.BundleFile{
					{Path: "runsc", Mode: ptr.To[int32](0o755)}, {Path: "gvisor-bin/", Mode: ptr.To[int32](0o755)},
					{Path: "release/lib/", Target: "lib/"}, {Path: "runsc.toml", Content: ptr.To("binary_name = \"$(BUNDLE_DIR)/runsc\"\n"), Substitute: true},
					{Path: "empty", Content: ptr.To("")},
				}
			},
			// A handler named like runc is not runc.
			func(s *v1alpha1.Shim) { s.Spec.RuntimeClass.Handler = "runc-systemd" },
			// No handler: the RuntimeClass name stands for it, as in the proposal.
			func(s *v1alpha1.Shim) {
				s.Spec.RuntimeClass = v1alpha1.RuntimeClassSpec{Name: "wasmtime-spin-v2"}
				s.Spec.Handlers = []v1alpha1.HandlerSpec{{RuntimeClass: v1alpha1.RuntimeClassSpec{Name: "wasmtime-spin-v3"}}}
			},
			// Migrations from runtime-class-manager, of both eras, and of a
			// defaulted handler.
			func(s *v1alpha1.Shim) { s.Spec.MigrateFrom = migrateFrom("spin", v1alpha1.RCMGroup) },
			func(s *v1alpha1.Shim) { s.Spec.MigrateFrom = migrateFrom("spin", v1alpha1.RCMGroupKWasm) },
			func(s *v1alpha1.Shim) {
				s.Spec.RuntimeClass = v1alpha1.RuntimeClassSpec{Name: "spin-v2"}
				s.Spec.MigrateFrom = migrateFrom("spin-v2", "")
			},
		} {
			s := validShim(fmt.Sprintf("good-%d", i))
			mutate(s)
			if err := env.Client.Create(ctx, s); err != nil {
				t.Errorf("good spec %d rejected: %v", i, err)
			}
		}
	})
	t.Run("migrateFrom's group defaults to runtime.spinkube.dev", func(t *testing.T) {
		s := validShim("migrate-default")
		s.Spec.MigrateFrom = migrateFrom("spin", "")
		if err := env.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		if g := s.Spec.MigrateFrom.RuntimeClassManager.APIGroup; g != v1alpha1.RCMGroup {
			t.Errorf("apiGroup %q", g)
		}
	})
	t.Run("bundle specs", func(t *testing.T) {
		for _, s := range bundleShims(t) {
			if err := env.Client.Create(ctx, s); err != nil {
				t.Errorf("%s rejected: %v", s.Name, err)
			}
		}
	})
	t.Run("handler is immutable", func(t *testing.T) {
		s := validShim("immutable")
		if err := env.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		s.Spec.RuntimeClass.Handler = "other"
		err := env.Client.Update(ctx, s)
		if err == nil || !strings.Contains(err.Error(), "runtimeClass.handler is immutable") {
			t.Errorf("update of the handler: %v", err)
		}
		s.Spec.RuntimeClass.Handler = "spin"
		s.Spec.FetchStrategy.AnonHTTP.Location = "https://example.invalid/spin-v2.tar.gz"
		if err := env.Client.Update(ctx, s); err != nil {
			t.Errorf("other fields must stay mutable: %v", err)
		}
	})
	t.Run("the scheduling label cannot change", func(t *testing.T) {
		s := validShim("scheduling")
		s.Spec.SchedulingLabel = "example.com/spin"
		if err := env.Client.Create(ctx, s); err != nil {
			t.Fatalf("a Shim with a scheduling label of its domain (Karpenter admits it): %v", err)
		}
		for _, label := range []string{"example.com/spin-2", ""} {
			s.Spec.SchedulingLabel = label
			if err := env.Client.Update(ctx, s); err == nil || !strings.Contains(err.Error(), "schedulingLabel cannot change") {
				t.Errorf("update of the scheduling label to %q: %v", label, err)
			}
		}
		plain := validShim("scheduling-added")
		if err := env.Client.Create(ctx, plain); err != nil {
			t.Fatal(err)
		}
		plain.Spec.SchedulingLabel = "example.com/spin-3"
		if err := env.Client.Update(ctx, plain); err == nil || !strings.Contains(err.Error(), "schedulingLabel cannot change") {
			t.Errorf("a scheduling label added later: %v", err)
		}
	})
	t.Run("a defaulted handler is immutable too", func(t *testing.T) {
		s := validShim("immutable-default")
		s.Spec.RuntimeClass = v1alpha1.RuntimeClassSpec{Name: "spin"}
		if err := env.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		s.Spec.RuntimeClass.Name = "spin-renamed" // would change the handler it stands for
		if err := env.Client.Update(ctx, s); err == nil || !strings.Contains(err.Error(), "runtimeClass.handler is immutable") {
			t.Errorf("rename of a RuntimeClass that is the handler: %v", err)
		}
		s.Spec.RuntimeClass = v1alpha1.RuntimeClassSpec{Name: "spin-renamed", Handler: "spin"} // the same handler, now explicit
		if err := env.Client.Update(ctx, s); err != nil {
			t.Errorf("naming the same handler explicitly: %v", err)
		}
	})
}
