package installer_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/plan"
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

// BenchmarkGVisorInstall installs gVisor as a bundle (runsc, its shim and
// runsc.toml, from a .tar.gz over HTTP, with the node's artifact cache
// emptied before each iteration) on the systemd node with containerd 2.2,
// and reports it next to a bare restart of the same containerd (restart
// through systemd and CRI health, nothing installed).
func BenchmarkGVisorInstall(b *testing.B) {
	ctx := context.Background()
	build := testutil.ContainerdMatrix(b)[2]
	n := testutil.StartNode(b, testutil.NodeOptions{Containerd: &build})
	runsc, shim := testutil.GVisorBins(b)
	read := func(p string) []byte {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		return data
	}
	a := testutil.NewArchive(b,
		testutil.ArchiveFile{Name: "runsc", Mode: 0o755, Data: read(runsc)},
		testutil.ArchiveFile{Name: "containerd-shim-runsc-v1", Mode: 0o755, Data: read(shim)},
		testutil.ArchiveFile{Name: "runsc.toml", Mode: 0o644, Data: testutil.RunscConfig{Runsc: "$(BUNDLE_DIR)/runsc"}.TOML()},
	)
	srv := testutil.StartFileServer(b)
	p := plan.New(plan.ShimRef{Name: "gvisor", UID: "uid-g"}, plan.OpInstall)
	p.Artifact = &plan.Artifact{Type: plan.SourceHTTP, URL: srv.Add("/gvisor.tar.gz", a.Data), Digest: "sha256:" + a.SHA256}
	p.Files = []plan.File{
		{Source: "runsc", Path: "runsc", Mode: 0o755},
		{Source: "containerd-shim-runsc-v1", Path: "containerd-shim-runsc-v1", Mode: 0o755},
		{Source: "runsc.toml", Path: "runsc.toml", Mode: 0o644, Substitute: true},
	}
	p.Handlers = []plan.Handler{{Name: "runsc", RuntimeType: "io.containerd.runsc.v1", RuntimePath: "$(BUNDLE_DIR)/containerd-shim-runsc-v1",
		Options: map[string]any{"TypeUrl": "io.containerd.runsc.v1.options", "ConfigPath": "$(BUNDLE_DIR)/runsc.toml"}}}
	p = rehash(p)
	inst := &installer.Installer{HostRoot: n.Root}
	b.Logf("artifact %.1f MiB compressed", float64(len(a.Data))/(1<<20))

	b.Run("bare-restart", func(b *testing.B) {
		r := &installer.SystemdRestarter{HostRoot: n.Root, Units: []string{"containerd"}}
		h := &installer.CRIHealth{Socket: n.Socket()}
		for b.Loop() {
			if err := r.Restart(ctx); err != nil {
				b.Fatal(err)
			}
			if err := h.Check(ctx, "", true); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("install", func(b *testing.B) {
		var restart time.Duration
		for b.Loop() {
			b.StopTimer()
			_ = os.RemoveAll(n.Local("/var/lib/shimkit/cache"))
			b.StartTimer()
			res, err := inst.Install(ctx, p)
			if err != nil || !res.Restarted {
				b.Fatalf("%+v %v", res, err)
			}
			restart += res.RestartDuration
			b.StopTimer()
			if _, err := inst.Uninstall(ctx, uninstallPlan("gvisor")); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		b.ReportMetric(float64(restart.Microseconds())/float64(b.N)/1000, "restart-ms")
	})
}
