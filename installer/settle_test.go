package installer_test

import (
	"context"
	"testing"
	"time"

	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
)

// TestCanarySettle: after a restart, the canary pod is created only
// CanarySettle after containerd answered again (the kubelet's connection
// to containerd has reconnected by then); none is waited for when set
// negative.
func TestCanarySettle(t *testing.T) {
	for _, tc := range []struct {
		name   string
		settle time.Duration
		min    time.Duration // the least time from containerd back to the canary
		max    time.Duration
	}{
		{"after a restart", 400 * time.Millisecond, 400 * time.Millisecond, 5 * time.Second},
		{"none asked", -1, 0, 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := testutil.StartFileServer(t)
			n := newFakeNode(t, "version = 2\n")
			inst := n.installer()
			inst.CanarySettle = tc.settle
			var back, canary time.Time
			inst.Restarter = installer.RestartFunc(func(context.Context) error { return nil })
			inst.Health = installer.HealthFunc(func(context.Context, string, bool) error { back = time.Now(); return nil })
			inst.Canary = installer.CanaryFunc(func(context.Context, plan.Canary) error { canary = time.Now(); return nil })
			p := twoPlans(t, srv)[0]
			p.Canary = &plan.Canary{Handler: p.Handlers[0].Name, RuntimeClass: "canary", Namespace: "ns", Image: "img", Timeout: plan.Duration(time.Minute)}
			rehash(p)
			if _, err := inst.Install(context.Background(), p); err != nil {
				t.Fatal(err)
			}
			if canary.IsZero() || back.IsZero() {
				t.Fatalf("canary at %v, containerd back at %v", canary, back)
			}
			if d := canary.Sub(back); d < tc.min || d > tc.max {
				t.Errorf("canary %v after containerd was back, want %v to %v", d, tc.min, tc.max)
			}
		})
	}
}
