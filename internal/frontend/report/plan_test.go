package report_test

import (
	"bytes"
	"path/filepath"
	"testing"

	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/shimkit/shimkit/internal/frontend/report"
	"github.com/shimkit/shimkit/internal/golden"
	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"k8s.io/utils/ptr"
)

// TestPlanGolden: kubectl shimkit plan for a spec change of the Shim of
// TestStatusGolden under maxUpdate 2 with a canary step that bakes: its
// waves, the nodes it skips and why, the node it uninstalls, and its
// RuntimeClass (another's of the name is a conflict, left alone); a file's
// content, quoted on one line.
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
	r := report.Plan(p)
	old := shim.DeepCopy()
	old.Spec.FetchStrategy = v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{Location: "https://artifacts.invalid/spin-v2.tar.gz", SHA256: "2222222222222222222222222222222222222222222222222222222222222222"}}
	old.Spec.RolloutStrategy = nil
	// A file the Shim wrote, gone: its content on the table's one line.
	old.Spec.Files = []v1alpha1.BundleFile{{Path: "runsc.toml", Content: ptr.To("binary_name = \"$(BUNDLE_DIR)/runsc\"\n\tdebug = true\n")}}
	if r.Changes, err = report.SpecChanges(report.Version{Spec: &old.Spec, Artifact: shim.Status.Artifact}, report.Version{Spec: &shim.Spec}); err != nil {
		t.Fatal(err)
	}
	for _, wide := range []bool{false, true} {
		var b bytes.Buffer
		if err := report.WritePlan(&b, r, wide, now); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join("testdata", map[bool]string{false: "plan.txt", true: "plan.wide"}[wide]), b.Bytes(), *update)
	}
	golden.Check(t, filepath.Join("testdata", "plan.json"), machine(t, report.KindPlan, r, "json"), *update)
	golden.Check(t, filepath.Join("testdata", "plan.yaml"), machine(t, report.KindPlan, r, "yaml"), *update)
	if !r.HasChanges() {
		t.Error("a plan of a new artifact: no changes")
	}
}
