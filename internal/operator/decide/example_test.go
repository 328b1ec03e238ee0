package decide_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/nodelabel/record"
	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/rollout"
)

// Three nodes lack the target, one has it: with maxUpdate 2, two start
// now, each with its plan. Nothing here talks to an API server.
func ExampleDecide() {
	view := func(name, hash string) decide.NodeView {
		v := decide.NodeView{Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, Matching: true}
		if hash != "" {
			v.Label, v.SpecHash = record.Installed, hash
		}
		return v
	}
	two := intstr.FromInt32(2)
	snap := &decide.Snapshot{Hash: "v2", Views: []decide.NodeView{view("a", "v2"), view("b", "v1"), view("c", ""), view("d", "v1")}}
	d, err := decide.Decide(snap, decide.Policy{
		Planner: rollout.Planner{Strategy: rollout.Strategy{MaxUpdate: &two}, SpecHash: "v2"},
		PlanFor: func(n *corev1.Node) (*plan.NodePlan, error) {
			p := plan.New(plan.ShimRef{Name: "spin"}, plan.OpInstall)
			p.Node, p.SpecHash = n.Name, "v2"
			return p, nil
		},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(d.Rollin.Start), "start;", d.Rollin.Remaining, "remaining; done:", d.Done())
	planned := 0
	for _, name := range d.Rollin.Start {
		if p := d.ByName[name].Plan; p != nil && p.Node == name {
			planned++
		}
	}
	fmt.Println(planned, "with their plans")
	// Output:
	// 2 start; 3 remaining; done: false
	// 2 with their plans
}
