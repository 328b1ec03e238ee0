package operator_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/golden"
	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

var bootOpts = operator.Options{RestartTimeout: 90 * time.Second, InstallerImage: "registry.example/shimkit-installer:v0.1.0", Namespace: "shimkit-system"}

// TestBootPlanGolden: a pool's boot plan is the operator's install plans
// of its Shims, in name order, naming no node, with no canary and no
// migration (testdata/plans/boot.json; -update rewrites it); the installer
// reads it back unchanged.
func TestBootPlanGolden(t *testing.T) {
	// A pool that runtime-class-manager once served: a new node has
	// nothing to migrate.
	migrate := readShim(t, "migrate")
	migrate.UID = "77777777-7777-4777-8777-777777777777"
	l, err := operator.BootPlan([]*v1alpha1.Shim{readShim(t, "platforms"), migrate, readShim(t, "gvisor")}, poolNode("arm64", map[string]string{"spin": "true", "spin-v2": "provisioned"}), bootOpts)
	if err != nil {
		t.Fatal(err)
	}
	data, err := plan.EncodeList(l)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata/plans", "boot.json"), data, *update)
	plans, err := plan.DecodePlans(data)
	if err != nil {
		t.Fatalf("the installer would refuse it: %v", err)
	}
	var names []string
	for _, p := range plans {
		if p.Node != "" || p.Canary != nil || p.Migrate != nil || p.Artifact.Platform != "linux/arm64" {
			t.Errorf("%s: node %q, canary %v, migrate %v, platform %s", p.Shim.Name, p.Node, p.Canary, p.Migrate, p.Artifact.Platform)
		}
		names = append(names, p.Shim.Name)
	}
	if got := strings.Join(names, " "); got != "gvisor spin-v2 wasmtime" {
		t.Errorf("plans of %s; want gvisor spin-v2 wasmtime", got)
	}
}

// TestBootPlanRefusals: what a boot cannot install is refused
// (ErrNoBootPlan), naming the Shim and why.
func TestBootPlanRefusals(t *testing.T) {
	now := metav1.Now()
	for _, tt := range []struct {
		name   string
		shim   func(*v1alpha1.Shim)
		labels map[string]string
		arch   string
		want   string
	}{
		{"no UID", func(s *v1alpha1.Shim) { s.UID = "" }, nil, "amd64", "no UID"},
		{"deleted", func(s *v1alpha1.Shim) { s.DeletionTimestamp, s.Finalizers = &now, []string{"x"} }, nil, "amd64", "being deleted"},
		{"preinstalled", func(s *v1alpha1.Shim) {
			s.Spec.FetchStrategy = v1alpha1.FetchStrategy{Type: v1alpha1.FetchPreinstalled}
		}, nil, "amd64", "nodes' image provides it"},
		{"not selected", func(s *v1alpha1.Shim) { s.Spec.NodeSelector = map[string]string{"pool": "wasm"} }, map[string]string{"pool": "gpu"}, "amd64", "does not select the pool's labels"},
		{"no artifact for the platform", func(s *v1alpha1.Shim) {
			s.Spec.FetchStrategy.AnonHTTP = &v1alpha1.AnonHTTPFetch{Platforms: []v1alpha1.PlatformArtifact{{Platform: "linux/amd64", Location: "https://artifacts.example/a.tgz", SHA256: strings.Repeat("a", 64)}}}
		}, nil, "riscv64", "cannot run it"},
		{"not pinned", func(s *v1alpha1.Shim) {
			s.Spec.FetchStrategy = v1alpha1.FetchStrategy{Type: v1alpha1.FetchOCI, OCI: &v1alpha1.OCIFetch{Reference: "registry.example/shims/gvisor:v1"}}
		}, nil, "amd64", "not pinned"},
		{"pull secret", func(s *v1alpha1.Shim) {
			s.Spec.FetchStrategy = v1alpha1.FetchStrategy{Type: v1alpha1.FetchOCI, OCI: &v1alpha1.OCIFetch{Reference: "registry.example/shims/gvisor@sha256:" + strings.Repeat("c", 64), PullSecretRef: &v1alpha1.SecretReference{Name: "creds", Namespace: "shimkit-system"}}}
		}, nil, "amd64", "pull secret"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := readShim(t, "gvisor")
			tt.shim(s)
			_, err := operator.BootPlan([]*v1alpha1.Shim{readShim(t, "plain"), s}, poolNode(tt.arch, tt.labels), bootOpts)
			if !errors.Is(err, operator.ErrNoBootPlan) || !strings.Contains(err.Error(), "Shim gvisor") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v; want ErrNoBootPlan naming Shim gvisor and %q", err, tt.want)
			}
		})
	}
	if _, err := operator.BootPlan(nil, poolNode("amd64", nil), bootOpts); !errors.Is(err, operator.ErrNoBootPlan) {
		t.Errorf("no Shim: %v", err)
	}
}

// poolNode is a node of a pool as its template declares it.
func poolNode(arch string, labels map[string]string) *corev1.Node {
	n := nodeOf("", arch)
	for k, v := range labels {
		n.Labels[k] = v
	}
	return n
}
