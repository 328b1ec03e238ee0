package rollout_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/shimkit/shimkit/rollout"
)

func ExamplePlanner_Install() {
	maxUpdate := intstr.FromString("50%")
	p := rollout.Planner{Strategy: rollout.Strategy{MaxUpdate: &maxUpdate}, ShimUID: "3f2c", SpecHash: "v2"}
	plan, _ := p.Install([]rollout.Node{
		{Name: "a", State: rollout.Installed, SpecHash: "v2"},
		{Name: "b", State: rollout.Installing, SpecHash: "v2"},
		{Name: "c", State: rollout.Installed, SpecHash: "v1"}, // an upgrade
		{Name: "d", State: rollout.Absent},
	})
	fmt.Println("budget", plan.Budget, "in flight", plan.InFlight, "start", len(plan.Start), "remaining", plan.Remaining)
	// Output: budget 2 in flight 1 start 1 remaining 3
}
