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

// TestBuildPlanErrors: a node of a platform without an artifact gets no
// plan (ErrNoArtifact), with the node and the field named.
func TestBuildPlanErrors(t *testing.T) {
	_, err := operator.BuildPlan(readShim(t, "platforms"), nodeOf("rv-1", "riscv64"), plan.OpInstall, operator.Options{})
	if !errors.Is(err, operator.ErrNoArtifact) || !strings.Contains(err.Error(), "rv-1") || !strings.Contains(err.Error(), "spec.fetchStrategy.anonHttp") {
		t.Errorf("riscv64 node: %v, want ErrNoArtifact naming the node and the field", err)
	}
	// Uninstalling needs no artifact.
	if _, err := operator.BuildPlan(readShim(t, "platforms"), nodeOf("rv-1", "riscv64"), plan.OpUninstall, operator.Options{}); err != nil {
		t.Errorf("uninstall plan: %v", err)
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
		s.Spec.Snapshotter = "overlayfs"
		if q, _ := operator.BuildPlan(s, nodeOf("n", "arm64"), plan.OpInstall, operator.Options{}); q.SpecHash == want {
			t.Errorf("%s: the snapshotter does not change the spec hash", file)
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
