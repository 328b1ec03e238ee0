package operator

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestDetectDrift: a node labelled at the target whose kubelet no longer
// reports one of the Shim's handlers is drifted, unless its installer
// runs or finished within driftGrace (then it is looked at again), or the
// node reports no handlers at all (containerd 1.x, an older kubelet).
func TestDetectDrift(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	shim := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "kata"}, Spec: v1alpha1.ShimSpec{
		RuntimeClass: v1alpha1.RuntimeClassSpec{Name: "kata", Handler: "kata"},
		Handlers:     []v1alpha1.HandlerSpec{{RuntimeClass: v1alpha1.RuntimeClassSpec{Name: "kata-fc", Handler: "kata-fc"}}},
	}}
	handlers := func(names ...string) []corev1.NodeRuntimeHandler {
		var out []corev1.NodeRuntimeHandler
		for _, n := range names {
			out = append(out, corev1.NodeRuntimeHandler{Name: n})
		}
		return out
	}
	finished := func(ago time.Duration) *jobview.View {
		j := &batchv1.Job{Status: batchv1.JobStatus{CompletionTime: &metav1.Time{Time: now.Add(-ago)},
			Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}}}
		return jobview.ViewOf(j)
	}
	for _, tc := range []struct {
		name     string
		label    string
		hash     string
		reported []corev1.NodeRuntimeHandler
		job      *jobview.View
		drifted  string
		recheck  time.Time
	}{
		{"all served", nodelabel.Installed, "h1", handlers("runc", "kata", "kata-fc"), nil, "", time.Time{}},
		{"a handler gone", nodelabel.Installed, "h1", handlers("runc", "kata"), nil, "handler kata-fc is not served", time.Time{}},
		{"nothing reported", nodelabel.Installed, "h1", nil, nil, "", time.Time{}},
		{"older hash: an upgrade anyway", nodelabel.Installed, "h0", handlers("runc"), nil, "", time.Time{}},
		{"not installed", "", "", handlers("runc"), nil, "", time.Time{}},
		{"installer just finished", nodelabel.Installed, "h1", handlers("runc"), finished(5 * time.Second), "", now.Add(25 * time.Second)},
		{"installer finished a while ago", nodelabel.Installed, "h1", handlers("runc"), finished(time.Minute), "handler kata is not served", time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{RuntimeHandlers: tc.reported}}
			v := decide.NodeView{Node: node, Matching: true, Label: tc.label, SpecHash: tc.hash, Job: tc.job}
			recheck := v.DetectDrift(shim, "h1", now)
			if v.Drifted != tc.drifted || !recheck.Equal(tc.recheck) {
				t.Errorf("drifted %q, recheck %v; want %q, %v", v.Drifted, recheck, tc.drifted, tc.recheck)
			}
			if v.Drifted != "" && (!v.NeedsInstall("h1") || v.PlannerNode("h1", false).SpecHash == "h1") {
				t.Error("a drifted node is not installed again")
			}
		})
	}
}
