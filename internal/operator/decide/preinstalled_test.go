package decide_test

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/rollout"
)

// TestDecidePreinstalled: nodes whose image has the shim are labelled or
// unlabelled, never given a Job, beside nodes installed as usual (a mixed
// fleet); a deleted Shim unlabels them, without a Job either.
func TestDecidePreinstalled(t *testing.T) {
	baked := func(name, at string, f func(*decide.NodeView)) decide.NodeView {
		return with(node(name, at), func(v *decide.NodeView) {
			v.Preinstalled = true
			if f != nil {
				f(v)
			}
		})
	}
	notReported := func(v *decide.NodeView) {
		v.Skip = &nodeview.Skip{Reason: v1alpha1.SkipHandlerNotReported, Detail: "handler spin is not reported"}
	}
	nodes := []decide.NodeView{
		baked("b-new", "", nil),              // reports the handlers: labelled
		baked("b-old", "h1", nil),            // labelled at an older spec: relabelled
		baked("b-done", target, nil),         // as it should be
		baked("b-gone", target, notReported), // stopped reporting a handler: unlabelled
		baked("b-never", "", notReported),    // never had it: nothing
		node("i-0", ""), node("i-1", "h1"),   // installed by Jobs
	}
	three := intstr.FromInt32(3)
	planner := rollout.Planner{Strategy: rollout.Strategy{MaxUpdate: &three}, SpecHash: target}
	d, err := decide.Decide(&decide.Snapshot{Shim: &v1alpha1.Shim{}, Hash: target, Views: nodes}, decide.Policy{Planner: planner, PlanFor: installPlan})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Label, []string{"b-new", "b-old"}) || !slices.Equal(d.Unlabel, []string{"b-gone"}) {
		t.Errorf("label %v, unlabel %v; want [b-new b-old], [b-gone]", d.Label, d.Unlabel)
	}
	if start := slices.Sorted(slices.Values(d.Rollin.Start)); !slices.Equal(start, []string{"i-0", "i-1"}) || len(d.Removal.Start) != 0 {
		t.Errorf("Jobs for %v and %v; want installs on i-0 and i-1 only", d.Rollin.Start, d.Removal.Start)
	}
	if d.Done() {
		t.Error("done with labels to write")
	}

	// Refused: labels stay as they are; a node no longer targeted still
	// loses its label.
	d, _ = decide.Decide(&decide.Snapshot{Shim: &v1alpha1.Shim{}, Hash: target, Refusal: refusal(true), Views: nodes}, decide.Policy{Planner: planner, PlanFor: installPlan})
	if len(d.Label) != 0 || !slices.Equal(d.Unlabel, []string{"b-gone"}) {
		t.Errorf("refused: label %v, unlabel %v", d.Label, d.Unlabel)
	}

	d, err = decide.DecideRemoval(&decide.Snapshot{Hash: target, Views: nodes}, planner, decide.DeliveryRules{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Unlabel, []string{"b-old", "b-done", "b-gone"}) || slices.ContainsFunc(d.Removal.Start, func(n string) bool { return n[0] == 'b' }) {
		t.Errorf("removal: unlabel %v, uninstall Jobs %v", d.Unlabel, d.Removal.Start)
	}
}
