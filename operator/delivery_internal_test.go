package operator

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestRolloutRulesRefused: rules the API server's validation lets through
// but the operator cannot read refuse the spec (InvalidSpec), naming the
// field; readable ones are read.
func TestRolloutRulesRefused(t *testing.T) {
	shim := func(rs v1alpha1.RolloutStrategy) *v1alpha1.Shim {
		return &v1alpha1.Shim{Spec: v1alpha1.ShimSpec{RolloutStrategy: &rs}}
	}
	bad := shim(v1alpha1.RolloutStrategy{Windows: []v1alpha1.MaintenanceWindow{
		{Start: "22:00", End: "04:00", TimeZone: "Europe/Berlin"},
		{Start: "01:00", End: "02:00", TimeZone: "Mars/Olympus_Mons"},
	}})
	ref := shimspec.RefusalOf(bad, Options{}.settings())
	if ref == nil || ref.Reason != v1alpha1.ReasonInvalidSpec || !strings.Contains(ref.Message, "spec.rolloutStrategy.windows[1]") || !strings.Contains(ref.Message, "Mars/Olympus_Mons") {
		t.Errorf("refusal %+v: want InvalidSpec naming windows[1] and the zone", ref)
	}
	good := shim(v1alpha1.RolloutStrategy{
		Windows: []v1alpha1.MaintenanceWindow{{Days: []string{"Sat", "Sun"}, Start: "02:00", End: "05:00", TimeZone: "America/New_York"}},
		Steps:   []v1alpha1.RolloutStep{{Nodes: intstr.FromInt32(1), Bake: &metav1.Duration{Duration: time.Hour}}, {Nodes: intstr.FromString("100%")}},
	})
	ws, ss, err := shimspec.RolloutRules(good)
	if err != nil || len(ws) != 1 || ws[0].Location.String() != "America/New_York" || len(ss) != 2 || ss[0].Bake != time.Hour {
		t.Errorf("rolloutRules = %+v %+v %v", ws, ss, err)
	}
	if shimspec.RefusalOf(good, Options{}.settings()) != nil {
		t.Error("readable rules refused")
	}
}
