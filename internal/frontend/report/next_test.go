package report_test

import (
	"testing"
	"time"

	"github.com/shimkit/shimkit/internal/frontend/report"
)

// TestNext: the line pause and resume print: the plan's first wave and
// when, what stops it after, or why nothing starts.
func TestNext(t *testing.T) {
	two := 2
	at := now.Add(90 * time.Second)
	for _, tc := range []struct {
		name string
		r    report.PlanReport
		want string
	}{
		{"nothing to do", report.PlanReport{}, "Next: nothing; every node is as the spec says"},
		{"paused", report.PlanReport{Stopped: "Paused"}, "Next: no node starts; it stops: Paused"},
		{"halted", report.PlanReport{Stopped: "Halted", Halt: "NodeFailed: n1"}, "Next: no node starts; it stops: Halted (NodeFailed: n1)"},
		{"a window, then a wave more", report.PlanReport{Waves: []report.PlanWave{{At: at, Upgrade: []string{"n1"}}, {At: at, Step: &two, Install: []string{"n2"}}}},
			"Next: at 2026-11-26T12:01:30Z (in 90s), upgrade n1, then 1 more wave"},
		{"now, many nodes, then a stop", report.PlanReport{Stopped: "WaitingForWindow", Waves: []report.PlanWave{{At: now, Install: []string{"a", "b", "c", "d", "e", "f"}, Uninstall: []string{"z"}}}},
			"Next: now, install a, b, c, d, e and 1 more; uninstall z; then it stops: WaitingForWindow"},
	} {
		if got := report.Next(tc.r, now); got != tc.want {
			t.Errorf("%s:\n got  %q\n want %q", tc.name, got, tc.want)
		}
	}
}
