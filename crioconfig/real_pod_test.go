package crioconfig_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shimkit/shimkit/crioconfig"
	"github.com/shimkit/shimkit/internal/testutil"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestRealCRIOPodOnOCIHandler runs a pod on an oci handler the Writer
// added: Debian's runc 1.1.5 copied where a Shim's bundle would put it
// (Debian's crun 1.8.1 refuses every container of CRI-O v1.34, whose
// runtime spec is 1.2.1: "unknown version specified"), a pod sandbox
// with that runtime handler (host network; the pid namespace per
// container, so CRI-O drops the infra container, whose oom_score_adj of
// -998 this machine, lacking CAP_SYS_RESOURCE, cannot set), a canary
// container that exits 0, and a long-running one whose conmon runs the
// handler's runc. The pause image is pulled by CRI-O from the registry stand-in.
// container_min_memory is enforced by CRI-O: a 2 MiB limit is refused
// under the handler's 4 MiB minimum.
func TestRealCRIOPodOnOCIHandler(t *testing.T) {
	t.Parallel() // each runs its own crio
	c, pause := startCRIOWithPause(t)
	runc := installCopy(t, c, "/usr/bin/runc", "opt/shimkit/runc-shimkit/bin/runc")
	h := crioconfig.RuntimeHandler{Name: "runc-shimkit", Kind: crioconfig.KindOCI, RuntimePath: runc,
		RuntimeRoot: filepath.Join(c.Dir, "run/runc-shimkit"), ContainerMinMemory: "4MiB"}
	installAndRestart(t, c, h)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rt, img := c.CRI.Runtime(t), c.CRI.Images(t)
	if _, err := img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: pause}}); err != nil {
		t.Fatalf("PullImage %s: %v\n%s", pause, err, c.Log.Tail())
	}
	sbConfig := sandboxConfig(c, "canary")
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sbConfig, RuntimeHandler: h.Name})
	if err != nil {
		t.Fatalf("RunPodSandbox on %s: %v\n%s", h.Name, err, c.Log.Tail())
	}
	// CRI-O v1.34 leaves PodSandboxStatus.runtime_handler empty; the
	// handler is in the sandbox spec's annotations (verbose info).
	st, err := rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb.PodSandboxId, Verbose: true})
	if err != nil || st.GetStatus().GetState() != runtimeapi.PodSandboxState_SANDBOX_READY ||
		!strings.Contains(st.GetInfo()["info"], `"io.kubernetes.cri-o.RuntimeHandler":"`+h.Name+`"`) {
		t.Fatalf("sandbox status %v, info %v, %v", st.GetStatus(), st.GetInfo(), err)
	}
	create := func(name string, args []string, memory int64) (string, error) {
		return createContainer(ctx, rt, sb.PodSandboxId, sbConfig, pause, name, args, memory)
	}
	if _, err := create("small", []string{"/pause", "exit", "0"}, 2<<20); err == nil || !strings.Contains(err.Error(), "should be at least") {
		t.Errorf("a 2 MiB container under a 4 MiB container_min_memory: %v", err)
	}
	canary, err := create("canary", []string{"/pause", "exit", "0"}, 0)
	if err != nil {
		t.Fatalf("CreateContainer: %v\n%s", err, c.Log.Tail())
	}
	if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: canary}); err != nil {
		t.Fatalf("StartContainer: %v\n%s", err, c.Log.Tail())
	}
	if code, err := waitExit(ctx, rt, canary); err != nil || code != 0 {
		t.Fatalf("canary: exit %d, %v\n%s", code, err, c.Log.Tail())
	}
	long, err := create("long", []string{"/pause"}, 0)
	if err == nil {
		_, err = rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: long})
	}
	if err != nil {
		t.Fatalf("long-running container: %v\n%s", err, c.Log.Tail())
	}
	if m, _ := filepath.Glob("/sys/fs/cgroup/*" + c.CgroupParent()); len(m) == 0 {
		t.Errorf("no cgroup %s: the pod's cgroups are elsewhere, and Teardown would not remove them", c.CgroupParent())
	}
	if pids := testutil.ProcessesMentioning(runc); len(pids) == 0 {
		t.Errorf("no process (conmon) runs the handler's binary %s", runc)
	}
	// Teardown stops and removes the pod through CRI.
}

func waitExit(ctx context.Context, rt runtimeapi.RuntimeServiceClient, id string) (int32, error) {
	for {
		st, err := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
		if err != nil {
			return 0, err
		}
		if st.GetStatus().GetState() == runtimeapi.ContainerState_CONTAINER_EXITED {
			return st.GetStatus().GetExitCode(), nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("container %s did not exit: %w", id, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestRealCRIOPodOnVMHandler: a shim v2 as a vm handler the Writer added
// runs a pod under CRI-O: the handler's binary is a wrapper named
// containerd-shim-probe-v2 that records its arguments and runs Debian's
// containerd 1.6 runc shim v2; CRI-O starts it for the pod sandbox, whose
// infra container it keeps for vm handlers
// (server/sandbox_run_linux.go: podIsKernelSeparated), and a canary
// container on it exits 0. What it is not: the shim's runc is
// testutil.RuncClamped, as CRI-O gives the infra container oom_score_adj
// -998 (PodInfraOOMAdj), which this machine, lacking CAP_SYS_RESOURCE,
// cannot set. containerd 2.x's runc shim cannot be used at all: it
// answers with JSON bootstrap parameters, which CRI-O v1.34 dials as an
// address (CRI-O main reads them since 2026-05).
func TestRealCRIOPodOnVMHandler(t *testing.T) {
	t.Parallel() // each runs its own crio
	c, pause := startCRIOWithPause(t)
	record := filepath.Join(c.Dir, "shim-started")
	wrapper := filepath.Join(c.Dir, "opt/shimkit/probe/containerd-shim-probe-v2")
	clamp := filepath.Join(c.Dir, "opt/shimkit/probe/path")
	if err := os.MkdirAll(clamp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(clamp, "runc"), testutil.RuncClamped("/usr/bin/runc"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\necho \"$@\" >> " + record + "\nPATH=" + clamp + ":$PATH exec /usr/bin/containerd-shim-runc-v2 \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	h := crioconfig.RuntimeHandler{Name: "probe-vm", Kind: crioconfig.KindVM, RuntimePath: wrapper}
	installAndRestart(t, c, h)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rt := c.CRI.Runtime(t)
	if _, err := c.CRI.Images(t).PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: pause}}); err != nil {
		t.Fatalf("PullImage %s: %v\n%s", pause, err, c.Log.Tail())
	}
	sbConfig := sandboxConfig(c, "vm")
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{RuntimeHandler: h.Name, Config: sbConfig})
	// CRI-O runs the binary with --version when it starts
	// (initializeRuntimeFeatures); for a sandbox it runs "... -id ID start".
	started, _ := os.ReadFile(record)
	if !strings.Contains(string(started), " -id ") || !strings.Contains(string(started), " start\n") {
		t.Fatalf("CRI-O did not start the vm handler's binary %s (RunPodSandbox: %v)\n%s", wrapper, err, c.Log.Tail())
	}
	if err != nil {
		t.Fatalf("RunPodSandbox on %s: %v\n%s", h.Name, err, c.Log.Tail())
	}
	canary, err := createContainer(ctx, rt, sb.PodSandboxId, sbConfig, pause, "canary", []string{"/pause", "exit", "0"}, 0)
	if err == nil {
		_, err = rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: canary})
	}
	if err != nil {
		t.Fatalf("canary container on %s: %v\n%s", h.Name, err, c.Log.Tail())
	}
	if code, err := waitExit(ctx, rt, canary); err != nil || code != 0 {
		t.Fatalf("canary on %s: exit %d, %v\n%s", h.Name, code, err, c.Log.Tail())
	}
	t.Logf("a pod sandbox and a canary container ran on the vm handler %s; CRI-O ran %s with: %s", h.Name, wrapper, strings.TrimSpace(string(started)))
	// Teardown stops and removes the pod through CRI.
}

// installAndRestart writes h with the Writer, commits it and restarts
// CRI-O, as the installer does.
func installAndRestart(t *testing.T, c *testutil.CRIO, h crioconfig.RuntimeHandler) {
	t.Helper()
	change, err := crioconfig.NewWriter(target(c), "shim/test").Install(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	if err := change.Commit(); err != nil {
		t.Fatal(err)
	}
	restart(t, c)
}

// sandboxConfig is a pod on the host's network with a pid namespace per
// container (so CRI-O drops an oci handler's infra container), under the
// CRI-O's cgroup parent.
func sandboxConfig(c *testutil.CRIO, name string) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: name + "-uid"},
		LogDirectory: filepath.Join(c.Dir, "log/pods", name),
		Linux: &runtimeapi.LinuxPodSandboxConfig{CgroupParent: c.CgroupParent(), SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE, Pid: runtimeapi.NamespaceMode_CONTAINER},
		}},
	}
}

// createContainer creates a container of image in the sandbox, as the
// kubelet asks for it (UserSpecifiedImage, which CRI-O requires, and the
// sandbox's namespaces), with a memory limit when memory > 0.
func createContainer(ctx context.Context, rt runtimeapi.RuntimeServiceClient, sandbox string, sbConfig *runtimeapi.PodSandboxConfig,
	image, name string, args []string, memory int64) (string, error) {
	resp, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId:  sandbox,
		SandboxConfig: sbConfig,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: name},
			Image:    &runtimeapi.ImageSpec{Image: image, UserSpecifiedImage: image},
			Command:  args,
			LogPath:  name + ".log",
			Linux: &runtimeapi.LinuxContainerConfig{
				Resources:       &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: memory},
				SecurityContext: &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: sbConfig.Linux.SecurityContext.NamespaceOptions},
			},
		},
	})
	return resp.GetContainerId(), err
}

// TestRealCRIOSIGHUPIsNotARestart shows why shimkit restarts CRI-O and
// never reloads it (cri-o #10202, seen on the pinned v1.34.0): after a
// SIGHUP, CRI-O announces the new handler in its CRI status (so the
// kubelet would put it in node.status.runtimeHandlers) but a pod sandbox
// on it fails; after a restart the same pod runs.
func TestRealCRIOSIGHUPIsNotARestart(t *testing.T) {
	t.Parallel() // each runs its own crio
	c, _ := startCRIOWithPause(t)
	runc := installCopy(t, c, "/usr/bin/runc", "opt/shimkit/runc-shimkit/bin/runc")
	h := crioconfig.RuntimeHandler{Name: "runc-shimkit", Kind: crioconfig.KindOCI, RuntimePath: runc, RuntimeRoot: filepath.Join(c.Dir, "run/runc-shimkit")}
	change, err := crioconfig.NewWriter(target(c), "shim/test").Install(context.Background(), h)
	if err == nil {
		err = change.Commit()
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Contains(c.CRI.Handlers(t), h.Name) {
		if time.Now().After(deadline) {
			t.Fatalf("CRI-O did not announce %s within 10 s of SIGHUP: %v", h.Name, c.CRI.Handlers(t))
		}
		time.Sleep(100 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rt := c.CRI.Runtime(t)
	_, err = rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig(c, "after-hup"), RuntimeHandler: h.Name})
	if err == nil || !strings.Contains(err.Error(), "failed to find runtime handler "+h.Name) {
		t.Fatalf("a sandbox on %s after SIGHUP: %v; want CRI-O's 'failed to find runtime handler' (cri-o #10202)", h.Name, err)
	}
	restart(t, c)
	rt = c.CRI.Runtime(t)
	if _, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig(c, "after-restart"), RuntimeHandler: h.Name}); err != nil {
		t.Fatalf("a sandbox on %s after a restart: %v\n%s", h.Name, err, c.Log.Tail())
	}
}

// startCRIOWithPause starts a CRI-O whose pause image (the reference
// returned) is served by a registry of the test's own: nothing is pulled
// from outside.
func startCRIOWithPause(t *testing.T) (*testutil.CRIO, string) {
	t.Helper()
	pause := testutil.PushPauseImage(t, testutil.StartRegistry(t, "", ""))
	return testutil.StartCRIO(t, testutil.WithPauseImage(pause)), pause
}
