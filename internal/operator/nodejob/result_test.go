package nodejob_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/nodejob"
)

func podWith(t *testing.T, name string, at time.Time, container string, results ...*plan.NodeResult) corev1.Pod {
	t.Helper()
	msg := ""
	switch len(results) {
	case 0:
	case 1:
		data, err := plan.EncodeResult(results[0], plan.MaxTerminationMessage)
		if err != nil {
			t.Fatal(err)
		}
		msg = string(data)
	default:
		data, err := plan.EncodeResults(results, plan.MaxTerminationMessage)
		if err != nil {
			t.Fatal(err)
		}
		msg = string(data)
	}
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(at)},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: container,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: msg}}}}},
	}
}

func result(shim string, outcome plan.Outcome, reason plan.Reason) *plan.NodeResult {
	p := plan.New(plan.ShimRef{Name: shim}, plan.OpInstall)
	p.Node = "n1"
	r := plan.NewResult(p)
	r.Outcome, r.Reason = outcome, reason
	return r
}

// TestResultOf: the newest pod's answer, the shim's own of a batch, and
// nothing from what is not the installer's.
func TestResultOf(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		pods []corev1.Pod
		shim string
		want *plan.NodeResult
	}{
		{name: "no pods", shim: "spin"},
		{name: "the newest pod's", shim: "spin", pods: []corev1.Pod{
			podWith(t, "a", t0.Add(time.Minute), nodejob.Container, result("spin", plan.Succeeded, "")),
			podWith(t, "b", t0, nodejob.Container, result("spin", plan.RolledBack, plan.ReasonConfigInvalid)),
		}, want: result("spin", plan.Succeeded, "")},
		{name: "a pod that wrote nothing is passed over", shim: "spin", pods: []corev1.Pod{
			podWith(t, "a", t0, nodejob.Container, result("spin", plan.RolledBack, plan.ReasonCanaryFailed)),
			podWith(t, "b", t0.Add(time.Minute), nodejob.Container),
		}, want: result("spin", plan.RolledBack, plan.ReasonCanaryFailed)},
		{name: "a batch's own result", shim: "wasm", pods: []corev1.Pod{
			podWith(t, "a", t0, nodejob.Container, result("spin", plan.Succeeded, ""), result("wasm", plan.RolledBack, plan.ReasonSiblingFailed)),
		}, want: result("wasm", plan.RolledBack, plan.ReasonSiblingFailed)},
		{name: "another container's message", shim: "spin", pods: []corev1.Pod{
			podWith(t, "a", t0, "sidecar", result("spin", plan.Succeeded, "")),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := nodejob.ResultOf(tc.pods, tc.shim)
			if (got == nil) != (tc.want == nil) || got != nil && (got.Shim.Name != tc.want.Shim.Name || got.Outcome != tc.want.Outcome || got.Reason != tc.want.Reason) {
				t.Errorf("ResultOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}
