package cli

import (
	"testing"
	"time"

	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/plan"
)

// TestSummaryNamesTheRuntime: the line an operation ends with names the
// runtime it restarted, and its unit when known.
func TestSummaryNamesTheRuntime(t *testing.T) {
	d := 167 * time.Millisecond
	for _, tc := range []struct {
		res  installer.Result
		want string
	}{
		{installer.Result{Restarted: true, Runtime: plan.RuntimeCRIO, RestartedUnit: "crio.service", RestartDuration: d}, "done; CRI-O (crio.service) restarted in 167ms"},
		{installer.Result{Restarted: true, Runtime: plan.RuntimeContainerd, RestartedUnit: "k3s.service", RestartDuration: d}, "done; containerd (k3s.service) restarted in 167ms"},
		{installer.Result{Restarted: true, Runtime: plan.RuntimeContainerd, RestartDuration: d}, "done; containerd restarted in 167ms"},
		{installer.Result{Restarted: true, RestartDuration: d}, "done; the container runtime restarted in 167ms"},
		{installer.Result{Changed: true, Runtime: plan.RuntimeCRIO}, "done; no restart needed"},
	} {
		if got := summary(string(plan.OpInstall), &tc.res); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.res, got, tc.want)
		}
	}
}
