package v1alpha1_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// deliveryShim is a valid Shim with every progressive-delivery field set,
// as README's "Rolling out safely" shows it.
func deliveryShim(name string) *v1alpha1.Shim {
	s := validShim(name)
	s.Spec.RolloutStrategy = &v1alpha1.RolloutStrategy{
		Type:    v1alpha1.RolloutRolling,
		Rolling: &v1alpha1.RollingUpdate{MaxUpdate: intOrString("10%")},
		Paused:  true,
		Windows: []v1alpha1.MaintenanceWindow{{Days: []string{"Mon", "Tue", "Wed", "Thu"}, Start: "22:00", End: "04:00", TimeZone: "Europe/Berlin"}},
		Steps: []v1alpha1.RolloutStep{
			{Nodes: intstr.FromInt32(1), Bake: &metav1.Duration{Duration: 30 * time.Minute}},
			{Nodes: intstr.FromString("10%"), Bake: &metav1.Duration{Duration: 10 * time.Minute}},
			{Nodes: intstr.FromString("100%")},
		},
		HealthGate: &v1alpha1.HealthGate{MaxFailuresPerNode: ptr.To[int32](1), MaxFailures: ptr.To[int32](3)},
		OnFailure:  v1alpha1.FailureRevert,
	}
	return s
}

// TestAdmissionDelivery proves the CRD's rules of spec.rolloutStrategy's
// pause, windows, steps, health gate and onFailure on a real API server:
// each bad value is rejected naming its field, the full example accepted.
//
// On each release the tests run: the oldest supported and the newest.
func TestAdmissionDelivery(t *testing.T) {
	for _, rel := range testutil.KubeReleases() {
		t.Run(rel, func(t *testing.T) { testAdmissionDelivery(t, testutil.StartEnvOf(t, rel, nil, v1alpha1.AddToScheme)) })
	}
}

func testAdmissionDelivery(t *testing.T, env *testutil.Env) {
	ctx := context.Background()
	if err := env.Client.Create(ctx, deliveryShim("delivery-good")); err != nil {
		t.Fatalf("the README's example rejected: %v", err)
	}
	window := func(w v1alpha1.MaintenanceWindow) func(*v1alpha1.RolloutStrategy) {
		return func(r *v1alpha1.RolloutStrategy) { r.Windows = []v1alpha1.MaintenanceWindow{w} }
	}
	step := func(nodes intstr.IntOrString) func(*v1alpha1.RolloutStrategy) {
		return func(r *v1alpha1.RolloutStrategy) { r.Steps = []v1alpha1.RolloutStep{{Nodes: nodes}} }
	}
	for i, tc := range []struct {
		name   string
		mutate func(*v1alpha1.RolloutStrategy)
		want   string // in the error
	}{
		{"a window that starts when it ends", window(v1alpha1.MaintenanceWindow{Start: "22:00", End: "22:00"}), "windows: start and end must differ"},
		{"a start past midnight's clock", window(v1alpha1.MaintenanceWindow{Start: "24:00", End: "02:00"}), "spec.rolloutStrategy.windows[0].start"},
		{"an end without minutes", window(v1alpha1.MaintenanceWindow{Start: "22:00", End: "4"}), "spec.rolloutStrategy.windows[0].end"},
		{"a day by its whole name", window(v1alpha1.MaintenanceWindow{Days: []string{"Monday"}, Start: "22:00", End: "04:00"}), "spec.rolloutStrategy.windows[0].days[0]"},
		{"more than 16 windows", func(r *v1alpha1.RolloutStrategy) {
			for range 17 {
				r.Windows = append(r.Windows, v1alpha1.MaintenanceWindow{Start: "22:00", End: "04:00"})
			}
		}, "spec.rolloutStrategy.windows"},
		{"a step of no nodes", step(intstr.FromInt32(0)), "rolloutStrategy.steps[].nodes: a count of at least 1 or a percentage from 1% to 100%"},
		{"a step of 0%", step(intstr.FromString("0%")), "rolloutStrategy.steps[].nodes: a count of at least 1 or a percentage from 1% to 100%"},
		{"a step over 100%", step(intstr.FromString("150%")), "rolloutStrategy.steps[].nodes: a count of at least 1 or a percentage from 1% to 100%"},
		{"a step by a word", step(intstr.FromString("all")), "rolloutStrategy.steps[].nodes: a count of at least 1 or a percentage from 1% to 100%"},
		{"more than 10 steps", func(r *v1alpha1.RolloutStrategy) {
			for range 11 {
				r.Steps = append(r.Steps, v1alpha1.RolloutStep{Nodes: intstr.FromInt32(1)})
			}
		}, "spec.rolloutStrategy.steps"},
		{"an unknown failure policy", func(r *v1alpha1.RolloutStrategy) { r.OnFailure = "Retry" }, "spec.rolloutStrategy.onFailure"},
		{"a gate that trips on no failure", func(r *v1alpha1.RolloutStrategy) { r.HealthGate.MaxFailures = ptr.To[int32](0) }, "spec.rolloutStrategy.healthGate.maxFailures"},
		{"a gate per node of no failure", func(r *v1alpha1.RolloutStrategy) { r.HealthGate.MaxFailuresPerNode = ptr.To[int32](0) }, "spec.rolloutStrategy.healthGate.maxFailuresPerNode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := deliveryShim(fmt.Sprintf("delivery-bad-%d", i))
			tc.mutate(s.Spec.RolloutStrategy)
			err := env.Client.Create(ctx, s)
			if err == nil {
				t.Fatalf("accepted; want an error naming %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not name %q", err, tc.want)
			}
		})
	}
}
