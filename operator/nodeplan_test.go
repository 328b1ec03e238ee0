package operator_test

import (
	"errors"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/golden"
	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// readShim reads a Shim of testdata/shims.
func readShim(t testing.TB, name string) *v1alpha1.Shim {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata/shims", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := &v1alpha1.Shim{}
	if err := yaml.UnmarshalStrict(data, s); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

func nodeOf(name, arch string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelArchStable: arch}}}
}

// TestBuildPlanGolden: the plans of the sample Shims are the golden files
// of testdata/plans (go test -run TestBuildPlanGolden -update rewrites
// them), valid, and survive plan.Decode unchanged, options' types
// included.
func TestBuildPlanGolden(t *testing.T) {
	opts := operator.Options{RestartTimeout: 90 * time.Second, InstallerImage: "registry.example/shimkit-installer:v0.1.0", Namespace: "shimkit-system"}
	for _, tt := range []struct {
		golden, shim, arch string
		op                 plan.Operation
		labels             map[string]string // more node labels
	}{
		{"plain", "plain", "amd64", plan.OpInstall, nil},
		{"gvisor", "gvisor", "amd64", plan.OpInstall, nil},
		{"kata", "kata", "amd64", plan.OpInstall, nil},
		{"sandboxer", "sandboxer", "amd64", plan.OpInstall, nil},
		{"platforms-arm64", "platforms", "arm64", plan.OpInstall, nil},
		{"oci-pull-secret", "oci", "amd64", plan.OpInstall, nil},
		{"runc-binaryname", "runc-binaryname", "amd64", plan.OpInstall, nil},
		{"adopt", "adopt", "amd64", plan.OpInstall, nil},
		{"proposal", "proposal", "amd64", plan.OpInstall, nil},
		{"uninstall", "gvisor", "amd64", plan.OpUninstall, nil},
		// A node runtime-class-manager provisioned.
		{"migrate", "migrate", "arm64", plan.OpInstall, map[string]string{"spin-v2": "provisioned", "spin": "true"}},
		{"migrate-file", "migrate-file", "amd64", plan.OpInstall, map[string]string{"wasmtime": "provisioned", "wasm": "true"}},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			node := nodeOf("node-1", tt.arch)
			maps.Copy(node.Labels, tt.labels)
			p, err := operator.BuildPlan(readShim(t, tt.shim), node, tt.op, opts)
			if err != nil {
				t.Fatal(err)
			}
			data, err := plan.Encode(p)
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata/plans", tt.golden+".json"), data, *update)
			back, err := plan.Decode(data)
			if err != nil {
				t.Fatalf("the installer would refuse it: %v", err)
			}
			if !reflect.DeepEqual(back, p) {
				t.Errorf("round trip through plan.Decode changed the plan:\n got %#v\nwant %#v", back, p)
			}
		})
	}
}

// TestBuildPlanErrors: an install plan is refused with an error that
// names the node and the field: a node of a platform without an artifact
// (ErrNoArtifact), containerd's runc shim without BinaryName or with a
// runtimePath (ErrReserved), a pull secret outside the operator's
// namespace (ErrPullSecretNamespace). Uninstalling needs none of these.
// TestCanaryDefaults: the canary runs the primary handler with the
// installer's image by default; the spec replaces the image (and then the
// installer's arguments), the command, the arguments and the timeout, or
// turns it off.
func TestCanaryDefaults(t *testing.T) {
	installerImage := "registry.example/shimkit-installer:v0.1.0"
	off := false
	for _, tt := range []struct {
		name   string
		canary *v1alpha1.Canary
		image  string
		want   *plan.Canary
	}{
		{"default", nil, installerImage, &plan.Canary{Handler: "runsc", RuntimeClass: "shimkit-canary-gvisor", Namespace: "shimkit-system", Image: installerImage, Args: []string{"canary"}, Timeout: plan.Duration(operator.DefaultCanaryTimeout)}},
		{"disabled", &v1alpha1.Canary{Enabled: &off}, installerImage, nil},
		{"own image", &v1alpha1.Canary{Image: "busybox:1"}, installerImage, &plan.Canary{Handler: "runsc", RuntimeClass: "shimkit-canary-gvisor", Namespace: "shimkit-system", Image: "busybox:1", Timeout: plan.Duration(operator.DefaultCanaryTimeout)}},
		{"own command", &v1alpha1.Canary{Image: "busybox:1", Command: []string{"/bin/true"}, Args: []string{"-x"}, Timeout: &metav1.Duration{Duration: 5 * time.Second}},
			installerImage, &plan.Canary{Handler: "runsc", RuntimeClass: "shimkit-canary-gvisor", Namespace: "shimkit-system", Image: "busybox:1", Command: []string{"/bin/true"}, Args: []string{"-x"}, Timeout: plan.Duration(5 * time.Second)}},
		{"no image known", nil, "", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			shim := readShim(t, "gvisor")
			shim.Spec.Canary = tt.canary
			p, err := operator.BuildPlan(shim, nodeOf("n1", "amd64"), plan.OpInstall, operator.Options{InstallerImage: tt.image, Namespace: "shimkit-system"})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(p.Canary, tt.want) {
				t.Errorf("canary %+v, want %+v", p.Canary, tt.want)
			}
			plain, err := operator.BuildPlan(readShim(t, "gvisor"), nodeOf("n1", "amd64"), plan.OpInstall, operator.Options{})
			if err != nil || p.SpecHash != plain.SpecHash {
				t.Errorf("the canary changed the spec hash (%v)", err)
			}
		})
	}
}

func TestBuildPlanErrors(t *testing.T) {
	opts := operator.Options{Namespace: "shimkit-system"}
	for _, tt := range []struct {
		name   string
		shim   string
		arch   string
		mutate func(*v1alpha1.Shim)
		err    error
		field  string
	}{
		{"riscv64 node", "platforms", "riscv64", nil, operator.ErrNoArtifact, "spec.fetchStrategy.anonHttp"},
		{"runc shim without BinaryName", "runc-binaryname", "amd64", func(s *v1alpha1.Shim) {
			s.Spec.RuntimeOptions.Raw = []byte(`{"SystemdCgroup": true}`)
		}, operator.ErrReserved, "spec.runtimeOptions.BinaryName"},
		{"runc shim with a runtime path", "runc-binaryname", "amd64", func(s *v1alpha1.Shim) {
			s.Spec.RuntimePath = "$(BUNDLE_DIR)/containerd-shim-runc-v2"
		}, operator.ErrReserved, "spec.runtimePath"},
		{"extra handler of runhcs", "kata", "amd64", func(s *v1alpha1.Shim) {
			s.Spec.Handlers[1].RuntimeType = "io.containerd.runhcs.v1"
			s.Spec.Handlers[1].RuntimePath = ""
		}, operator.ErrReserved, "spec.handlers[1].runtimeOptions.BinaryName"},
		{"pull secret elsewhere", "oci", "amd64", func(s *v1alpha1.Shim) {
			s.Spec.FetchStrategy.OCI.PullSecretRef.Namespace = "tenant-a"
		}, operator.ErrPullSecretNamespace, "spec.fetchStrategy.oci.pullSecretRef.namespace"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := readShim(t, tt.shim)
			if tt.mutate != nil {
				tt.mutate(s)
			}
			_, err := operator.BuildPlan(s, nodeOf("node-7", tt.arch), plan.OpInstall, opts)
			if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), "node-7") || !strings.Contains(err.Error(), tt.field) {
				t.Errorf("%v, want %v naming the node and %s", err, tt.err, tt.field)
			}
			if _, err := operator.BuildPlan(s, nodeOf("node-7", tt.arch), plan.OpUninstall, opts); err != nil {
				t.Errorf("uninstall plan: %v", err)
			}
		})
	}
	// The golden Shims are all fine in the operator's namespace.
	if _, err := operator.BuildPlan(readShim(t, "oci"), nodeOf("n", "amd64"), plan.OpInstall, opts); err != nil {
		t.Errorf("oci.yaml in shimkit-system: %v", err)
	}
}

// TestSpecHashStable: a Shim of before bundles keeps the spec hash the
// operator gave it before (these values were computed by that operator),
// so upgrading the operator reinstalls no node; a new field changes it.
func TestSpecHashStable(t *testing.T) {
	for file, want := range map[string]string{
		"testdata/shims/oci.yaml":       "46a6d2031718ac2e",
		"testdata/shims/platforms.yaml": "a43eb06d9c4e5a85",
		"config/samples/shim_oci.yaml":  "51896b672754ffa7",
	} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		s := &v1alpha1.Shim{}
		if err := yaml.UnmarshalStrict(data, s); err != nil {
			t.Fatal(err)
		}
		p, err := operator.BuildPlan(s, nodeOf("n", "arm64"), plan.OpInstall, operator.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if p.SpecHash != want {
			t.Errorf("%s: spec hash %s, want %s as before", file, p.SpecHash, want)
		}
		for field, mutate := range map[string]func(*v1alpha1.Shim){
			"snapshotter":               func(s *v1alpha1.Shim) { s.Spec.Snapshotter = "overlayfs" },
			"runtimeClass.adoptHandler": func(s *v1alpha1.Shim) { s.Spec.RuntimeClass.AdoptHandler = true },
			"migrateFrom": func(s *v1alpha1.Shim) {
				s.Spec.MigrateFrom = &v1alpha1.MigrateFrom{RuntimeClassManager: v1alpha1.RuntimeClassManagerShim{Shim: s.Spec.RuntimeClass.HandlerName()}}
			},
			"files[].content": func(s *v1alpha1.Shim) {
				s.Spec.Files = append(s.Spec.Files, v1alpha1.BundleFile{Path: "runsc.toml", Content: ptr.To("")})
			},
			"files[].path, a directory": func(s *v1alpha1.Shim) {
				s.Spec.Files = append(s.Spec.Files, v1alpha1.BundleFile{Path: "gvisor-bin/"})
			},
			"handlers[].runtimeClass.adoptHandler": func(s *v1alpha1.Shim) {
				s.Spec.Handlers = append(s.Spec.Handlers, v1alpha1.HandlerSpec{RuntimeClass: v1alpha1.RuntimeClassSpec{Name: "x", Handler: "x", AdoptHandler: true}})
			},
		} {
			c := s.DeepCopy()
			mutate(c)
			if q, _ := operator.BuildPlan(c, nodeOf("n", "arm64"), plan.OpInstall, operator.Options{}); q.SpecHash == want {
				t.Errorf("%s: %s does not change the spec hash", file, field)
			}
		}
	}
}

// TestBuildPlanMigrate: with spec.migrateFrom, an install plan migrates
// the handler on a node that carries runtime-class-manager's label for
// that Shim (any of its values) and none of shimkit's; on no other node,
// and never in an uninstall plan. A migrateFrom that is not the handler is
// refused.
func TestBuildPlanMigrate(t *testing.T) {
	shim := readShim(t, "migrate")
	for _, tt := range []struct {
		labels  map[string]string
		migrate bool
	}{
		{map[string]string{"spin-v2": "provisioned"}, true},
		{map[string]string{"spin-v2": "pending"}, true},
		{map[string]string{"spin-v2": "failed"}, true},
		{map[string]string{"spin-v2": "uninstall"}, true},
		{nil, false},
		{map[string]string{"spin-v2": "true"}, false},                                                       // not a value of runtime-class-manager's
		{map[string]string{"spin": "provisioned"}, false},                                                   // another Shim's
		{map[string]string{"wasmtime": "provisioned"}, false},                                               // another Shim's
		{map[string]string{"spin-v2": "provisioned", nodelabel.Key("spin-v2"): nodelabel.Installed}, false}, // shimkit's already
		{map[string]string{"spin-v2": "provisioned", nodelabel.Key("spin-v2"): "uninstalling"}, false},
	} {
		node := nodeOf("n", "amd64")
		maps.Copy(node.Labels, tt.labels)
		p, err := operator.BuildPlan(shim, node, plan.OpInstall, operator.Options{})
		if err != nil {
			t.Fatal(err)
		}
		want := (*plan.Migration)(nil)
		if tt.migrate {
			want = &plan.Migration{From: plan.FromRuntimeClassManager, Handler: "spin-v2"}
		}
		if !reflect.DeepEqual(p.Migrate, want) {
			t.Errorf("node labels %v: Migrate %+v, want %+v", tt.labels, p.Migrate, want)
		}
		if u, err := operator.BuildPlan(shim, node, plan.OpUninstall, operator.Options{}); err != nil || u.Migrate != nil {
			t.Errorf("uninstall plan: %+v %v", u, err)
		}
	}
	if p, _ := operator.BuildPlan(readShim(t, "platforms"), nodeOf("n", "amd64"), plan.OpInstall, operator.Options{}); p.Migrate != nil {
		t.Errorf("without migrateFrom: %+v", p.Migrate)
	}
	bad := shim.DeepCopy()
	bad.Spec.MigrateFrom.RuntimeClassManager.Shim = "spin"
	if _, err := operator.BuildPlan(bad, nodeOf("n", "amd64"), plan.OpInstall, operator.Options{}); err == nil || !strings.Contains(err.Error(), "spec.migrateFrom.runtimeClassManager.shim") {
		t.Errorf("migrateFrom of another handler: %v", err)
	}
}

// BenchmarkBuildPlan: a rollout plans every node that lacks the current
// spec on every reconcile.
func BenchmarkBuildPlan(b *testing.B) {
	s, node := readShim(b, "kata"), nodeOf("node-1", "amd64")
	for b.Loop() {
		if _, err := operator.BuildPlan(s, node, plan.OpInstall, operator.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
