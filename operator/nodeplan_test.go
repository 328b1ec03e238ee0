package operator_test

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/shimkit/shimkit/installer/plan"
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
	opts := operator.Options{RestartTimeout: 90 * time.Second}
	for _, tt := range []struct {
		golden, shim, arch string
		op                 plan.Operation
	}{
		{"plain", "plain", "amd64", plan.OpInstall},
		{"gvisor", "gvisor", "amd64", plan.OpInstall},
		{"kata", "kata", "amd64", plan.OpInstall},
		{"sandboxer", "sandboxer", "amd64", plan.OpInstall},
		{"platforms-arm64", "platforms", "arm64", plan.OpInstall},
		{"oci-pull-secret", "oci", "amd64", plan.OpInstall},
		{"runc-binaryname", "runc-binaryname", "amd64", plan.OpInstall},
		{"adopt", "adopt", "amd64", plan.OpInstall},
		{"proposal", "proposal", "amd64", plan.OpInstall},
		{"uninstall", "gvisor", "amd64", plan.OpUninstall},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			p, err := operator.BuildPlan(readShim(t, tt.shim), nodeOf("node-1", tt.arch), tt.op, opts)
			if err != nil {
				t.Fatal(err)
			}
			data, err := plan.Encode(p)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata/plans", tt.golden+".json")
			if *update {
				if err := os.WriteFile(golden, data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(data, want) {
				t.Errorf("plan differs from %s (-update rewrites it):\n%s", golden, data)
			}
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
