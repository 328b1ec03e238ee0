package decide_test

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/rollout"
)

// TestDeliver: the progressive-delivery rules on one decision each, with
// an injected time: which nodes start, the hold, the stage and the halt.
func TestDeliver(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC) // a Wednesday
	three := intstr.FromInt32(3)
	planner := rollout.Planner{Strategy: rollout.Strategy{MaxUpdate: &three}, ShimUID: "uid-spin", SpecHash: target}
	fresh := func(n string) decide.NodeView { return with(node(n, ""), func(v *decide.NodeView) { v.Fresh = true }) }
	forced := func(n string) decide.NodeView {
		return with(node(n, "h1"), func(v *decide.NodeView) { v.Forced = true })
	}
	nightly, err := rollout.ParseWindow(nil, "22:00", "04:00", "")
	if err != nil {
		t.Fatal(err)
	}
	canarySteps := rollout.Steps{{Nodes: intstr.FromInt32(1), Bake: 30 * time.Minute}, {Nodes: intstr.FromString("100%")}}
	trip := &decide.Trip{Reason: v1alpha1.ReasonWorkloadFailures, Message: "web-1 on n0"}
	for _, tc := range []struct {
		name      string
		nodes     []decide.NodeView
		dl        decide.DeliveryRules
		start     int      // how many nodes start
		mustStart []string // among them
		hold      decide.Hold
		stage     rollout.Stage
		revert    bool
		done      bool
	}{
		{name: "no rules: maxUpdate", nodes: oldNodes("n0", "n1", "n2", "n3"), dl: decide.DeliveryRules{Now: t0}, start: 3},
		{name: "paused: nothing starts", nodes: oldNodes("n0", "n1", "n2", "n3"), dl: decide.DeliveryRules{Now: t0, Paused: true}, hold: decide.HoldPaused},
		{name: "paused and rolled out: no hold", nodes: []decide.NodeView{node("n0", target)}, dl: decide.DeliveryRules{Now: t0, Paused: true}, done: true},
		{name: "window closed: only fresh and forced nodes", nodes: append(oldNodes("n0", "n1", "n2"), fresh("n3"), forced("n4")),
			dl: decide.DeliveryRules{Now: t0, Windows: rollout.Windows{nightly}}, start: 2, mustStart: []string{"n3", "n4"}, hold: decide.HoldWindow},
		{name: "window closed: workload nodes wait", nodes: oldNodes("n0", "n1"),
			dl: decide.DeliveryRules{Now: t0, Windows: rollout.Windows{nightly}}, hold: decide.HoldWindow},
		{name: "window open", nodes: oldNodes("n0", "n1"),
			dl: decide.DeliveryRules{Now: t0.Add(11 * time.Hour), Windows: rollout.Windows{nightly}}, start: 2},
		{name: "first step: one node", nodes: oldNodes("n0", "n1", "n2", "n3"), dl: decide.DeliveryRules{Now: t0, Steps: canarySteps}, start: 1},
		{name: "first step done: bake", nodes: append(oldNodes("n1", "n2", "n3"), node("n0", target)), dl: decide.DeliveryRules{Now: t0, Steps: canarySteps},
			hold: decide.HoldBaking, stage: rollout.Stage{BakeUntil: t0.Add(30 * time.Minute)}},
		{name: "bake over: maxUpdate again", nodes: append(oldNodes("n1", "n2", "n3"), node("n0", target)),
			dl: decide.DeliveryRules{Now: t0.Add(30 * time.Minute), Steps: canarySteps, Stage: rollout.Stage{BakeUntil: t0.Add(30 * time.Minute)}}, start: 3, stage: rollout.Stage{Step: 1}},
		{name: "gate trips during the bake: halt", nodes: append(oldNodes("n1", "n2", "n3"), node("n0", target)),
			dl:   decide.DeliveryRules{Now: t0.Add(30 * time.Minute), Steps: canarySteps, Stage: rollout.Stage{BakeUntil: t0.Add(30 * time.Minute)}, Gate: trip},
			hold: decide.HoldHalted, stage: rollout.Stage{BakeUntil: t0.Add(30 * time.Minute)}},
		{name: "bake over but the gate could not judge: still baking", nodes: append(oldNodes("n1", "n2", "n3"), node("n0", target)),
			dl:   decide.DeliveryRules{Now: t0.Add(30 * time.Minute), Steps: canarySteps, Stage: rollout.Stage{BakeUntil: t0.Add(30 * time.Minute)}, Unjudged: true},
			hold: decide.HoldBaking, stage: rollout.Stage{BakeUntil: t0.Add(30 * time.Minute)}},
		{name: "a recorded halt stands", nodes: append(oldNodes("n1", "n2", "n3"), node("n0", target)), dl: decide.DeliveryRules{Now: t0, Halt: trip}, hold: decide.HoldHalted},
		{name: "halt with Revert: revert", nodes: append(oldNodes("n1", "n2", "n3"), node("n0", target)), dl: decide.DeliveryRules{Now: t0, Gate: trip, CanRevert: true},
			hold: decide.HoldHalted, revert: true},
		{name: "the last step bakes before done", nodes: []decide.NodeView{node("n0", target), node("n1", target)},
			dl:   decide.DeliveryRules{Now: t0, Steps: rollout.Steps{{Nodes: intstr.FromString("100%"), Bake: time.Hour}}},
			hold: decide.HoldBaking, stage: rollout.Stage{BakeUntil: t0.Add(time.Hour)}},
		{name: "the last bake over: done", nodes: []decide.NodeView{node("n0", target), node("n1", target)},
			dl:    decide.DeliveryRules{Now: t0.Add(time.Hour), Steps: rollout.Steps{{Nodes: intstr.FromString("100%"), Bake: time.Hour}}, Stage: rollout.Stage{BakeUntil: t0.Add(time.Hour)}},
			stage: rollout.Stage{Step: 1}, done: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := decide.Decide(&decide.Snapshot{Shim: &v1alpha1.Shim{}, Hash: target, Views: tc.nodes}, decide.Policy{Planner: planner, PlanFor: installPlan, Delivery: tc.dl})
			if err != nil {
				t.Fatal(err)
			}
			got := d.Delivered
			if len(d.Rollin.Start) != tc.start {
				t.Errorf("start %v, want %d nodes", d.Rollin.Start, tc.start)
			}
			for _, n := range tc.mustStart {
				if !slices.Contains(d.Rollin.Start, n) {
					t.Errorf("start %v lacks %s", d.Rollin.Start, n)
				}
			}
			if got.Hold != tc.hold || got.Stage != tc.stage || got.Revert != tc.revert || d.Done() != tc.done {
				t.Errorf("hold %q stage %+v revert %v done %v; want %q %+v %v %v", got.Hold, got.Stage, got.Revert, d.Done(), tc.hold, tc.stage, tc.revert, tc.done)
			}
			if tc.hold == decide.HoldWindow && !got.NextWindow.Equal(t0.Add(10*time.Hour)) {
				t.Errorf("next window %s, want 22:00", got.NextWindow)
			}
		})
	}
}

// TestDecideRemovalWaitsForWindow: a deleted Shim's uninstalls keep to the
// windows and the pause too.
func TestDecideRemovalWaitsForWindow(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	nightly, _ := rollout.ParseWindow(nil, "22:00", "04:00", "")
	nodes := []decide.NodeView{node("n0", target), with(node("n1", target), func(v *decide.NodeView) { v.Forced = true })}
	planner := rollout.Planner{Strategy: rollout.Strategy{Recreate: true}, SpecHash: target}
	d, err := decide.DecideRemoval(&decide.Snapshot{Hash: target, Views: nodes}, planner, decide.DeliveryRules{Now: t0, Windows: rollout.Windows{nightly}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Removal.Start, []string{"n1"}) || d.Delivered.Hold != decide.HoldWindow {
		t.Errorf("start %v hold %q, want n1 only, WaitingForWindow", d.Removal.Start, d.Delivered.Hold)
	}
	d, _ = decide.DecideRemoval(&decide.Snapshot{Hash: target, Views: nodes}, planner, decide.DeliveryRules{Now: t0, Paused: true})
	if len(d.Removal.Start) != 0 || d.Delivered.Hold != decide.HoldPaused {
		t.Errorf("paused: start %v hold %q", d.Removal.Start, d.Delivered.Hold)
	}
}
