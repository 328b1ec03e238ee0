package rollout_test

import (
	"fmt"
	"time"

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

func ExampleWindows_Open() {
	nightly, _ := rollout.ParseWindow([]string{"Mon", "Tue", "Wed", "Thu"}, "22:00", "04:00", "Europe/Berlin")
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC) // a Wednesday
	open, next := rollout.Windows{nightly}.Open(now)
	fmt.Println(open, next.UTC().Format(time.RFC3339))
	// Output: false 2026-11-25T21:00:00Z
}

func ExampleSteps_Advance() {
	steps := rollout.Steps{{Nodes: intstr.FromInt32(1), Bake: 30 * time.Minute}, {Nodes: intstr.FromString("100%")}}
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	s, _ := steps.Advance(rollout.Stage{}, rollout.Progress{Total: 20}, now, true)
	fmt.Println("step", s.Stage.Step, "may start", s.Allowed)
	s, _ = steps.Advance(s.Stage, rollout.Progress{Total: 20, Updated: 1}, now, true)
	fmt.Println("baking", s.Baking, "until", s.Stage.BakeUntil.Format(time.Kitchen))
	s, _ = steps.Advance(s.Stage, rollout.Progress{Total: 20, Updated: 1}, now.Add(30*time.Minute), true)
	fmt.Println("step", s.Stage.Step, "may start", s.Allowed)
	// Output:
	// step 0 may start 1
	// baking true until 12:30PM
	// step 1 may start 19
}
