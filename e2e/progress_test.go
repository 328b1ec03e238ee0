package e2e

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// progressLine is what the demo prints of a Shim's rollout: "waiting for
// the operator" until the operator first wrote the status (its counts
// would read 0/0 before), then the node counts.
func progressLine(s *v1alpha1.Shim) string {
	if s.Status.ObservedGeneration == 0 && len(s.Status.Conditions) == 0 {
		return "waiting for the operator"
	}
	return fmt.Sprintf("nodes done %d/%d, in progress %d, failed %d", s.Status.UpdatedNodes, s.Status.Nodes, s.Status.InProgressNodes, s.Status.FailedNodes)
}

// TestProgressLine: make demo says it waits for the operator until the
// Shim has a status, not "nodes done 0/0".
func TestProgressLine(t *testing.T) {
	fresh := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "demo", Generation: 1}}
	seen := fresh.DeepCopy()
	seen.Status = v1alpha1.ShimStatus{ObservedGeneration: 1, Nodes: 1, InProgressNodes: 1,
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse}}}
	for _, c := range []struct {
		s    *v1alpha1.Shim
		want string
	}{
		{fresh, "waiting for the operator"},
		{seen, "nodes done 0/1, in progress 1, failed 0"},
	} {
		if got := progressLine(c.s); got != c.want {
			t.Errorf("progressLine = %q, want %q", got, c.want)
		}
	}
}
