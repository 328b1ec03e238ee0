package report_test

import (
	"bytes"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/shimkit/shimkit/internal/frontend/report"
	"github.com/shimkit/shimkit/internal/golden"
	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// workloadsOf are pods on the fleet's nodes: web-1 (under a budget that
// allows no disruption) and web-2 with the Shim's RuntimeClass on
// n-current, cache (emptyDir data) and a DaemonSet's agent on
// n-outdated, and a pod of the operator's own namespace there.
func workloadsOf() operator.Workloads {
	pod := func(ns, name, node string, class *string, mutate ...func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}},
			Spec: corev1.PodSpec{NodeName: node, RuntimeClassName: class}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		for _, m := range mutate {
			m(p)
		}
		return p
	}
	spin := ptr.To("spin")
	return operator.Workloads{
		Pods: []*corev1.Pod{
			pod("default", "web-1", "n-current", spin),
			pod("default", "web-2", "n-current", spin),
			pod("default", "cache", "n-outdated", nil, func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			}),
			pod("default", "api", "n-outdated", nil),
			pod("kube-system", "agent", "n-outdated", nil, func(p *corev1.Pod) {
				p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "agent", Controller: ptr.To(true)}}
			}),
			pod("shimkit-system", "installer", "n-outdated", nil),
		},
		Budgets: []*policyv1.PodDisruptionBudget{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1"},
			Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web-1"}}},
			Status:     policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 1, DesiredHealthy: 1},
		}},
	}
}

// TestDrainPlanGolden: the plan of a change under disruption Drain says,
// per wave, what draining each node would do now: the pods it evicts,
// and those that keep it from emptying, with why.
func TestDrainPlanGolden(t *testing.T) {
	shim, nodes, jobs := fleetOf()
	two := intstr.FromInt32(2)
	shim.Spec.FetchStrategy = v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{Location: "https://artifacts.invalid/spin-v3.tar.gz", SHA256: "3333333333333333333333333333333333333333333333333333333333333333"}}
	shim.Spec.RolloutStrategy = &v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutRolling, Rolling: &v1alpha1.RollingUpdate{MaxUpdate: &two},
		Disruption: &v1alpha1.Disruption{Policy: v1alpha1.DisruptDrain}}
	opts := operator.Options{InstallerImage: "shimkit-installer:test", Namespace: "shimkit-system"}
	p, err := operator.PreviewRollout(shim, nodes, jobs, results, nil, opts, now)
	if err != nil {
		t.Fatal(err)
	}
	r := report.Plan(p)
	r.Drains = operator.PreviewDrains(p, workloadsOf(), opts)
	var b bytes.Buffer
	if err := report.WritePlan(&b, r, false, now); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "drain-plan.txt"), b.Bytes(), *update)
	golden.Check(t, filepath.Join("testdata", "drain-plan.json"), machine(t, report.KindPlan, r, "json"), *update)
}

// TestRemovalGolden: kubectl shimkit plan --delete names the nodes
// uninstalled at once and after, the node that waits for its pods (under
// deletePolicy Evict: the budget that refuses an eviction now), and the
// RuntimeClass deleted last.
func TestRemovalGolden(t *testing.T) {
	shim, nodes, jobs := fleetOf()
	shim.Spec.DeletePolicy = v1alpha1.DeleteEvict
	p, err := operator.PreviewRemoval(shim, nodes, jobs, results, workloadsOf(), operator.Options{InstallerImage: "shimkit-installer:test", Namespace: "shimkit-system"}, now)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := report.WriteRemoval(&b, p, false); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "removal.txt"), b.Bytes(), *update)
	golden.Check(t, filepath.Join("testdata", "removal.json"), machine(t, report.KindRemoval, p, "json"), *update)
}
