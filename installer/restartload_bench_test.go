package installer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/internal/testutil"
)

// loadedPod is a pod sandbox with one running container.
type loadedPod struct{ sandbox, container string }

// runLoad runs n pod sandboxes with the handler, each with a pause
// container, on the node's containerd.
func runLoad(ctx context.Context, b testing.TB, rt runtimeapi.RuntimeServiceClient, handler string, from, n int) []loadedPod {
	b.Helper()
	pods := make([]loadedPod, 0, n)
	for i := from; i < from+n; i++ {
		name := fmt.Sprintf("load-%03d", i)
		cfg := &runtimeapi.PodSandboxConfig{
			Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: name + "-uid"},
			Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}}},
		}
		sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg, RuntimeHandler: handler})
		if err != nil {
			b.Fatalf("pod %d: %v", i, err)
		}
		c, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, SandboxConfig: cfg,
			Config: &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "pause"}, Image: &runtimeapi.ImageSpec{Image: testutil.PauseImageRef}}})
		if err != nil {
			b.Fatalf("pod %d: %v", i, err)
		}
		if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId}); err != nil {
			b.Fatalf("pod %d: %v", i, err)
		}
		pods = append(pods, loadedPod{sb.PodSandboxId, c.ContainerId})
	}
	return pods
}

// checkLoad counts the pods whose sandbox is no longer ready or whose
// container no longer runs (restarted or gone), and how many containers
// answer an exec.
func checkLoad(ctx context.Context, rt runtimeapi.RuntimeServiceClient, pods []loadedPod) (broken, execOK int) {
	for _, p := range pods {
		sb, err := rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: p.sandbox})
		c, cerr := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: p.container})
		if err != nil || cerr != nil || sb.GetStatus().GetState() != runtimeapi.PodSandboxState_SANDBOX_READY ||
			c.GetStatus().GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
			broken++
			continue
		}
		if _, err := rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: p.container, Cmd: []string{"/pause", "exit", "0"}, Timeout: 5}); err == nil {
			execOK++
		}
	}
	return broken, execOK
}

// BenchmarkRestartUnderLoad restarts containerd through systemd, as the
// installer does, on a node running 0, 50 and 100 pods (a sandbox of a
// shim's handler and a pause container each), and measures until CRI
// answers with the handler served again (the installer's health check),
// then that no pod's sandbox or container was disrupted (broken must be
// 0) and that every container answers an exec
// (go test ./installer -run '^$' -bench RestartUnderLoad -benchtime 3x -timeout 30m).
func BenchmarkRestartUnderLoad(b *testing.B) {
	ctx := context.Background()
	builds := testutil.ContainerdMatrix(b)
	for _, nc := range []struct {
		name  string
		build *testutil.ContainerdBuild
	}{{"containerd-1.6", nil}, {"containerd-" + builds[2].Name, &builds[2]}} {
		b.Run(nc.name, func(b *testing.B) {
			n := testutil.StartNode(b, testutil.NodeOptions{Containerd: nc.build})
			shim := "/usr/bin/containerd-shim-runc-v2" // Debian's, for its containerd
			if nc.build != nil {
				shim = nc.build.Binary("containerd-shim-runc-v2")
			}
			srv := testutil.StartFileServer(b)
			inst := &installer.Installer{HostRoot: n.Root}
			if _, err := inst.Install(ctx, httpPlan(srv, "/demo.tar.gz", testutil.NewShimArchive(b, "demo", shim, nil))); err != nil {
				b.Fatal(err)
			}
			testutil.ImportPause(b, "/usr/bin/ctr", n.Socket())
			rt := runtimeClient(b, n.Socket())
			restarter := &installer.SystemdRestarter{HostRoot: n.Root, Units: []string{"containerd"}}
			health := &installer.CRIHealth{Socket: n.Socket(), Timeout: 2 * time.Minute}
			var pods []loadedPod
			for _, load := range []int{0, 50, 100} {
				pods = append(pods, runLoad(ctx, b, rt, "demo", len(pods), load-len(pods))...)
				b.Run(fmt.Sprintf("pods-%d", load), func(b *testing.B) {
					var broken, execOK int
					for b.Loop() {
						if err := restarter.Restart(ctx); err != nil {
							b.Fatal(err)
						}
						if err := health.Check(ctx, "demo", true); err != nil {
							b.Fatal(err)
						}
						b.StopTimer()
						br, ok := checkLoad(ctx, rt, pods)
						broken, execOK = broken+br, execOK+ok
						b.StartTimer()
					}
					b.ReportMetric(float64(broken)/float64(b.N), "pods-broken/op")
					if len(pods) > 0 {
						b.ReportMetric(100*float64(execOK)/float64(b.N*len(pods)), "exec-ok-%")
					}
					if broken > 0 {
						b.Errorf("%d pods broken by %d restarts", broken, b.N)
					}
				})
			}
		})
	}
}
