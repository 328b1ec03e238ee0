package installer_test

import (
	"context"
	"testing"
	"time"

	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/internal/testutil"
)

// BenchmarkInstallOverhead installs a shim (a 9 MiB runc shim copy, over
// HTTP) on the systemd node and measures the installer's overhead: the
// whole install minus containerd's restart and health check. Each iteration
// uninstalls again, untimed. The noop case is a re-run of the same spec.
func BenchmarkInstallOverhead(b *testing.B) {
	ctx := context.Background()
	n := testutil.StartNode(b, testutil.NodeOptions{})
	a := testutil.NewShimArchive(b, "demo", "/usr/bin/containerd-shim-runc-v2", nil)
	srv := testutil.StartFileServer(b)
	spec := httpPlan(srv, "/demo.tar.gz", a)
	inst := &installer.Installer{HostRoot: n.Root}
	b.Run("install", func(b *testing.B) {
		steps := map[string]time.Duration{}
		var last time.Time
		record := func(s string) { now := time.Now(); steps[s] += now.Sub(last); last = now }
		var total, restart time.Duration
		for b.Loop() {
			last = time.Now()
			inst.AfterStep = record
			res, err := inst.Install(ctx, spec)
			inst.AfterStep = nil
			if err != nil || !res.Restarted {
				b.Fatalf("%+v %v", res, err)
			}
			total += res.Duration
			restart += res.RestartDuration
			b.StopTimer()
			if _, err := inst.Uninstall(ctx, uninstallPlan("demo")); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		nb := float64(b.N)
		fetched := steps["fetched"]
		b.ReportMetric(float64(restart.Microseconds())/nb/1000, "restart-ms")
		b.ReportMetric(float64((total-restart).Microseconds())/nb/1000, "overhead-ms")
		b.ReportMetric(100*float64(total-restart)/float64(restart), "overhead-%")
		b.ReportMetric(float64((total-restart-fetched).Microseconds())/nb/1000, "overhead-without-fetch-ms")
		b.ReportMetric(100*float64(total-restart-fetched)/float64(restart), "overhead-without-fetch-%")
		for _, s := range []string{"locked", "fetched", "configured", "placed", "linked", "units", "restarted-containerd", "restarted", "committed", "done"} {
			b.Logf("step %-10s %6.1f ms/op", s, float64(steps[s].Microseconds())/nb/1000)
		}
	})
	b.Run("noop", func(b *testing.B) {
		if _, err := inst.Install(ctx, spec); err != nil {
			b.Fatal(err)
		}
		restarts := 0
		for b.Loop() {
			res, err := inst.Install(ctx, spec)
			if err != nil {
				b.Fatal(err)
			}
			if res.Restarted {
				restarts++
			}
		}
		b.ReportMetric(float64(restarts), "restarts")
	})
}
