package report_test

import (
	"bytes"
	"path/filepath"
	"testing"

	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/shimkit/shimkit/internal/golden"
	"github.com/shimkit/shimkit/internal/operator/report"
	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestPlanGolden: kubectl shimkit plan for a spec change of the Shim of
// TestStatusGolden under maxUpdate 2 with a canary step that bakes: its
// waves, the nodes it skips and why, the node it uninstalls, and its
// RuntimeClass (another's of the name is a conflict, left alone).
func TestPlanGolden(t *testing.T) {
	shim, nodes, jobs := fleetOf()
	two := intstr.FromInt32(2)
	shim.Spec.FetchStrategy = v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{Location: "https://artifacts.invalid/spin-v3.tar.gz", SHA256: "3333333333333333333333333333333333333333333333333333333333333333"}}
	shim.Spec.RolloutStrategy = &v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutRolling, Rolling: &v1alpha1.RollingUpdate{MaxUpdate: &two},
		Steps: []v1alpha1.RolloutStep{{Nodes: intstr.FromInt32(1), Bake: &metav1.Duration{Duration: 600e9}}, {Nodes: intstr.FromString("100%")}}}
	foreign := nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "spin"}, Handler: "spin"}
	p, err := operator.PreviewRollout(shim, nodes, jobs, results, []nodev1.RuntimeClass{foreign}, operator.Options{InstallerImage: "shimkit-installer:test", Namespace: "shimkit-system"}, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{report.FormatTable, report.FormatJSON, report.FormatYAML} {
		var b bytes.Buffer
		if err := report.WritePlan(&b, report.Plan(p), format, now); err != nil {
			t.Fatal(err)
		}
		name := format
		if name == "" {
			name = "txt"
		}
		golden.Check(t, filepath.Join("testdata", "plan."+name), b.Bytes(), *update)
	}
}
