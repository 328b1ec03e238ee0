package rollout

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestStepCount(t *testing.T) {
	for _, tc := range []struct {
		nodes intstr.IntOrString
		total int
		want  int
	}{
		{intstr.FromInt32(1), 50, 1},
		{intstr.FromInt32(10), 3, 3},
		{intstr.FromString("10%"), 30, 3},
		{intstr.FromString("10%"), 31, 4},
		{intstr.FromString("1%"), 5, 1},
		{intstr.FromString("33%"), 100, 33},
		{intstr.FromString("34%"), 3, 2},
		{intstr.FromString("100%"), 7, 7},
		{intstr.FromString("50%"), 0, 0},
	} {
		got, err := Step{Nodes: tc.nodes}.Count(tc.total)
		if err != nil || got != tc.want {
			t.Errorf("%s of %d = %d, %v; want %d", tc.nodes.String(), tc.total, got, err, tc.want)
		}
	}
	for _, bad := range []intstr.IntOrString{intstr.FromInt32(0), intstr.FromString("0%"), intstr.FromString("101%"), intstr.FromString("ten")} {
		if _, err := (Step{Nodes: bad}).Count(10); err == nil {
			t.Errorf("%s: no error", bad.String())
		}
	}
}

func TestStepsAdvance(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	canary := Steps{{Nodes: intstr.FromInt32(1), Bake: 30 * time.Minute}, {Nodes: intstr.FromString("50%"), Bake: 10 * time.Minute}, {Nodes: intstr.FromString("100%")}}
	for _, tc := range []struct {
		name    string
		steps   Steps
		stage   Stage
		p       Progress
		now     time.Time
		healthy bool
		want    Staged
	}{
		{"no steps: unbounded", nil, Stage{}, Progress{Total: 10}, t0, true, Staged{Allowed: -1}},
		{"first step: one node", canary, Stage{}, Progress{Total: 10}, t0, true, Staged{Allowed: 1}},
		{"first step's node changing", canary, Stage{}, Progress{Total: 10, InFlight: 1}, t0, true, Staged{}},
		{"first step done: the bake starts", canary, Stage{}, Progress{Total: 10, Updated: 1}, t0, true,
			Staged{Stage: Stage{BakeUntil: t0.Add(30 * time.Minute)}, Baking: true}},
		{"a bake that starts mid-second ends on the next whole second", canary, Stage{}, Progress{Total: 10, Updated: 1}, t0.Add(400 * time.Millisecond), true,
			Staged{Stage: Stage{BakeUntil: t0.Add(30*time.Minute + time.Second)}, Baking: true}},
		{"baking", canary, Stage{BakeUntil: t0.Add(time.Minute)}, Progress{Total: 10, Updated: 1}, t0, true,
			Staged{Stage: Stage{BakeUntil: t0.Add(time.Minute)}, Baking: true}},
		{"bake over: the next step's nodes", canary, Stage{BakeUntil: t0}, Progress{Total: 10, Updated: 1}, t0, true,
			Staged{Stage: Stage{Step: 1}, Allowed: 4}},
		{"bake over but unhealthy: held", canary, Stage{BakeUntil: t0}, Progress{Total: 10, Updated: 1}, t0, false,
			Staged{Stage: Stage{BakeUntil: t0}, Baking: true}},
		{"a step already reached (nodes joined): straight to its bake", canary, Stage{Step: 1}, Progress{Total: 10, Updated: 6}, t0, true,
			Staged{Stage: Stage{Step: 1, BakeUntil: t0.Add(10 * time.Minute)}, Baking: true}},
		{"last step: the rest, unbounded", canary, Stage{Step: 1, BakeUntil: t0}, Progress{Total: 10, Updated: 5}, t0, true,
			Staged{Stage: Stage{Step: 2}, Allowed: 5}},
		{"past the last step", canary, Stage{Step: 2}, Progress{Total: 10, Updated: 10}, t0, true,
			Staged{Stage: Stage{Step: 3}, Allowed: -1}},
		{"a last step short of every node: the rest follow", Steps{{Nodes: intstr.FromInt32(2)}}, Stage{}, Progress{Total: 10, Updated: 2}, t0, true,
			Staged{Stage: Stage{Step: 1}, Allowed: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.steps.Advance(tc.stage, tc.p, tc.now, tc.healthy)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Advance = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestPlanLimit(t *testing.T) {
	p := Plan{Start: []string{"a", "b", "c"}}
	p.Limit(-1)
	if len(p.Start) != 3 {
		t.Fatal(p.Start)
	}
	p.Limit(1)
	if len(p.Start) != 1 || p.Start[0] != "a" {
		t.Fatal(p.Start)
	}
	p.Limit(0)
	if len(p.Start) != 0 {
		t.Fatal(p.Start)
	}
}
