package decide_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/rollout"
)

// TestSimulate: the waves of a rollout from a snapshot, each started node
// taken as done: maxUpdate, steps with bakes, a window, a pause, a failed
// node (the rollout halts), removals, and the first wave is what Decide
// decides now.
func TestSimulate(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	planner := func(max int32) rollout.Planner {
		m := intstr.FromInt32(max)
		return rollout.Planner{Strategy: rollout.Strategy{MaxUpdate: &m}, ShimUID: "uid-spin", SpecHash: target}
	}
	nightly, err := rollout.ParseWindow(nil, "22:00", "04:00", "")
	if err != nil {
		t.Fatal(err)
	}
	steps := rollout.Steps{{Nodes: intstr.FromInt32(1), Bake: 30 * time.Minute}, {Nodes: intstr.FromString("100%")}}
	failed := with(node("n9", "h1"), func(v *decide.NodeView) { v.Job = job("install", target, "Failed", rolledBack(plan.ReasonConflict)) })
	leaving := with(node("x0", "h1"), func(v *decide.NodeView) { v.Matching = false })
	for _, tc := range []struct {
		name  string
		nodes []decide.NodeView
		max   int32
		dl    decide.DeliveryRules
		want  string // the waves, "at step [install] [remove]" each (the planner's order: a hash of the Shim's UID and the node)
		stop  decide.Hold
	}{
		{"maxUpdate 2", oldNodes("n0", "n1", "n2", "n3", "n4"), 2, decide.DeliveryRules{Now: t0},
			"12:00 step-1 [n4 n1] []; 12:00 step-1 [n0 n3] []; 12:00 step-1 [n2] []", ""},
		{"steps bake", oldNodes("n0", "n1", "n2"), 3, decide.DeliveryRules{Now: t0, Steps: steps},
			"12:00 step0 [n1] []; 12:30 step1 [n0 n2] []", ""},
		{"a window", oldNodes("n0", "n1"), 1, decide.DeliveryRules{Now: t0, Windows: rollout.Windows{nightly}},
			"22:00 step-1 [n1] []; 22:00 step-1 [n0] []", ""},
		{"paused", oldNodes("n0", "n1"), 1, decide.DeliveryRules{Now: t0, Paused: true}, "", decide.HoldPaused},
		{"a failed node halts", append(oldNodes("n0", "n1"), failed), 1, decide.DeliveryRules{Now: t0}, "", decide.HoldHalted},
		{"a node leaves", append(oldNodes("n0"), leaving), 1, decide.DeliveryRules{Now: t0},
			"12:00 step-1 [n0] [x0]", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &decide.Snapshot{Shim: &v1alpha1.Shim{}, Hash: target, Views: tc.nodes}
			sim, err := decide.Simulate(s, decide.Policy{Planner: planner(tc.max), PlanFor: installPlan, Delivery: tc.dl})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range sim.Waves {
				got = append(got, fmt.Sprintf("%s step%d %v %v", w.At.Format("15:04"), w.Step, w.Install, w.Remove))
			}
			if g := strings.Join(got, "; "); g != tc.want || sim.Stopped != tc.stop {
				t.Errorf("waves %q, stopped %q\nwant  %q, stopped %q", g, sim.Stopped, tc.want, tc.stop)
			}
			if len(sim.Waves) > 0 && sim.Waves[0].At.Equal(t0) && fmt.Sprint(sim.First.Rollin.Start) != fmt.Sprint(sim.Waves[0].Install) && len(sim.First.Removal.Start) == 0 {
				t.Errorf("first wave %v, Decide starts %v", sim.Waves[0].Install, sim.First.Rollin.Start)
			}
		})
	}
}
