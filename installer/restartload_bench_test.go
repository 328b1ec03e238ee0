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

// runLoad runs n pod sandboxes with the handler, each with a container
// of the pause image, on the node's runtime.
func runLoad(ctx context.Context, b testing.TB, rt runtimeapi.RuntimeServiceClient, handler string, from, n int) []loadedPod {
	return runLoadOf(ctx, b, rt, handler, testutil.PauseImageRef, from, n)
}

func runLoadOf(ctx context.Context, b testing.TB, rt runtimeapi.RuntimeServiceClient, handler, image string, from, n int) []loadedPod {
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
			Config: &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "pause"}, Image: &runtimeapi.ImageSpec{Image: image, UserSpecifiedImage: image}}})
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

// loadNode is a node of the benchmark: its runtime's unit, the handler
// its pods run with and their image.
type loadNode struct {
	n             *testutil.Node
	unit, handler string
	image         string
}

// BenchmarkRestartUnderLoad restarts the node's runtime through systemd,
// as the installer does, on a node running 0, 50 and 100 pods (a sandbox
// of a shim's handler and a pause container each): containerd 1.6,
// containerd 2.2 and CRI-O. It measures until CRI answers with the
// handler served again (the installer's health check), then that no
// pod's sandbox or container was disrupted (broken must be 0) and that
// every container answers an exec
// (go test ./installer -run '^$' -bench RestartUnderLoad -benchtime 3x -timeout 30m).
func BenchmarkRestartUnderLoad(b *testing.B) {
	builds := testutil.ContainerdMatrix(b)
	for _, rt := range []struct {
		name  string
		start func(b *testing.B) loadNode
	}{
		{"containerd-1.6", func(b *testing.B) loadNode { return containerdLoadNode(b, nil) }},
		{"containerd-" + builds[2].Name, func(b *testing.B) loadNode { return containerdLoadNode(b, &builds[2]) }},
		{"crio", crioLoadNode},
	} {
		b.Run(rt.name, func(b *testing.B) { restartUnderLoad(b, rt.start(b)) })
	}
}

// containerdLoadNode is a containerd node (build nil: Debian's 1.6) with
// the demo Shim, a renamed runc shim, installed.
func containerdLoadNode(b *testing.B, build *testutil.ContainerdBuild) loadNode {
	n := testutil.StartNode(b, testutil.NodeOptions{Containerd: build})
	shim := "/usr/bin/containerd-shim-runc-v2" // Debian's, for its containerd
	if build != nil {
		shim = build.Binary("containerd-shim-runc-v2")
	}
	srv := testutil.StartFileServer(b)
	inst := &installer.Installer{HostRoot: n.Root}
	if _, err := inst.Install(context.Background(), httpPlan(srv, "/demo.tar.gz", testutil.NewShimArchive(b, "demo", shim, nil))); err != nil {
		b.Fatal(err)
	}
	testutil.ImportPause(b, "/usr/bin/ctr", n.Socket())
	return loadNode{n: n, unit: "containerd", handler: "demo", image: testutil.PauseImageRef}
}

// crioLoadNode is a CRI-O node with the runc-bench Shim (an OCI runtime
// in the Shim's bundle, an oci handler) installed, its pause image pulled
// from a registry of the test.
func crioLoadNode(b *testing.B) loadNode {
	ctx := context.Background()
	reg := testutil.StartRegistry(b, "", "")
	pause := testutil.PushPauseImage(b, reg)
	n := testutil.StartNode(b, testutil.NodeOptions{CRIO: true, HostNetwork: true, Files: map[string][]byte{
		"/etc/crio/crio.conf.d/20-bench.conf": []byte("[crio.image]\npause_image = \"" + pause + "\"\n"),
		"/etc/containers/registries.conf":     []byte("[[registry]]\nlocation = \"" + reg.Host + "\"\ninsecure = true\n"),
	}})
	srv := testutil.StartFileServer(b)
	inst := &installer.Installer{HostRoot: n.Root}
	// The node's runc, through the script that takes out of a bundle what
	// this machine cannot grant (as the node's default runtime does).
	if _, err := inst.Install(ctx, ociRuntimePlan(b, srv, "runc-bench", testutil.RuncClamped("/usr/bin/runc"), 0o755)); err != nil {
		b.Fatal(err)
	}
	if _, err := (testutil.CRIEndpoint{Socket: n.Socket()}).Images(b).PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: pause}}); err != nil {
		b.Fatal(err)
	}
	return loadNode{n: n, unit: "crio", handler: "runc-bench", image: pause}
}

// restartUnderLoad is one runtime's benchmark: 0, 50, then 100 pods.
func restartUnderLoad(b *testing.B, ln loadNode) {
	ctx := context.Background()
	rt := runtimeClient(b, ln.n.Socket())
	restarter := &installer.SystemdRestarter{HostRoot: ln.n.Root, Units: []string{ln.unit}}
	health := &installer.CRIHealth{Socket: ln.n.Socket(), Timeout: 2 * time.Minute}
	var pods []loadedPod
	for _, load := range []int{0, 50, 100} {
		pods = append(pods, runLoadOf(ctx, b, rt, ln.handler, ln.image, len(pods), load-len(pods))...)
		b.Run(fmt.Sprintf("pods-%d", load), func(b *testing.B) {
			var broken, execOK int
			for b.Loop() {
				if err := restarter.Restart(ctx); err != nil {
					b.Fatal(err)
				}
				if err := health.Check(ctx, ln.handler, true); err != nil {
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
}
