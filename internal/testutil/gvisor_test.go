package testutil_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/shimkit/shimkit/internal/testutil"
)

// TestGVisorRunsContainer runs a pod sandbox and a busybox container over
// CRI on containerd 2.2 with a runsc handler served by the cached gVisor
// shim, and checks that the container's kernel is gVisor's.
func TestGVisorRunsContainer(t *testing.T) {
	testutil.RequireHarness(t)
	runsc, shim := testutil.GVisorBins(t)
	b := containerd22(t)
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	rc := testutil.RunscConfig{Runsc: runsc, Root: filepath.Join(dir, "root"), Flags: testutil.RunscFlags()}
	rc.Flags["debug-log"] = logs + "/"
	rcPath := filepath.Join(dir, "runsc.toml")
	if err := os.WriteFile(rcPath, rc.TOML(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("runsc.toml:\n%s\nrunsc logs:\n%s", rc.TOML(), runscLogTails(logs))
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	config := append(b.MinimalConfig(), testutil.RunscHandler(b, "runsc", rcPath)...)
	c := testutil.StartContainerd(t, b, config, testutil.WithPath(testutil.GVisorShimDir(t, shim)))
	c.ImportPause(t)
	testutil.ImportBusybox(t, b.Binary("ctr"), c.Socket)
	rt := c.Runtime(t)

	runGVisorPod(ctx, t, rt)
}

// runGVisorPod runs a pod sandbox with the handler runsc and a busybox
// container in it, and checks that dmesg in the container is gVisor's.
func runGVisorPod(ctx context.Context, t *testing.T, rt runtimeapi.RuntimeServiceClient) {
	t.Helper()
	start := time.Now()
	sandbox, exe, err := testutil.RunSandbox(ctx, rt, "runsc", "gvisor")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("gVisor pod sandbox running in %v", time.Since(start).Round(time.Millisecond))
	if filepath.Base(exe) != "containerd-shim-runsc-v1" {
		t.Errorf("sandbox %s is served by %s, want containerd-shim-runsc-v1", sandbox, exe)
	}
	created, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: sandbox,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "busybox"},
			Image:    &runtimeapi.ImageSpec{Image: testutil.BusyboxImageRef},
			Command:  []string{"/bin/busybox", "sleep", "3600"},
		},
		SandboxConfig: &runtimeapi.PodSandboxConfig{
			Metadata: &runtimeapi.PodSandboxMetadata{Name: "gvisor", Namespace: "default", Uid: "gvisor-uid"},
		},
	})
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: created.ContainerId}); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	t.Logf("container running %v after RunPodSandbox", time.Since(start).Round(time.Millisecond))
	for _, cmd := range [][]string{{"/bin/busybox", "dmesg"}, {"/bin/busybox", "cat", "/proc/version"}} {
		res, err := rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: created.ContainerId, Cmd: cmd, Timeout: 30})
		if err != nil {
			t.Fatalf("ExecSync %v: %v", cmd, err)
		}
		t.Logf("%s:\n%s%s", strings.Join(cmd[1:], " "), res.Stdout, res.Stderr)
		if res.ExitCode != 0 {
			t.Errorf("%v exited %d", cmd, res.ExitCode)
		}
		if cmd[1] == "dmesg" && !strings.Contains(string(res.Stdout), "gVisor") {
			t.Errorf("dmesg does not mention gVisor: the container does not run in gVisor")
		}
	}
}

// runscLogTails returns the last lines of every runsc log in dir.
func runscLogTails(dir string) string {
	entries, _ := os.ReadDir(dir)
	var b strings.Builder
	for _, e := range entries {
		data, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 15 {
			lines = lines[len(lines)-15:]
		}
		b.WriteString("== " + e.Name() + "\n" + strings.Join(lines, "\n") + "\n")
	}
	return b.String()
}

// TestGVisorOnNode runs the same gVisor pod inside the node sandbox, whose
// containerd 2.2 is a systemd unit, as on the e2e cluster's node.
func TestGVisorOnNode(t *testing.T) {
	testutil.RequireHarness(t)
	runsc, shim := testutil.GVisorBins(t)
	b := containerd22(t)
	rc := testutil.RunscConfig{Runsc: "/opt/gvisor/runsc", Flags: testutil.RunscFlags()}
	rc.Flags["debug-log"] = "/var/log/runsc/"
	config := append(b.MinimalConfig(), testutil.RunscHandler(b, "runsc", "/etc/containerd/runsc.toml")...)
	n := testutil.StartNode(t, testutil.NodeOptions{Containerd: &b, Files: map[string][]byte{
		"/etc/containerd/config.toml": config,
		"/etc/containerd/runsc.toml":  rc.TOML(),
	}})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("runsc logs:\n%s\n%s", runscLogTails(n.Local("/var/log/runsc")), n.Journal("containerd"))
		}
	})
	for dst, data := range map[string][]byte{
		"/opt/gvisor/runsc":                       mustRead(t, runsc),
		"/opt/gvisor/containerd-shim-runsc-v1":    mustRead(t, shim),
		"/opt/gvisor/uid_map":                     []byte(testutil.GVisorUIDMap),
		"/usr/local/bin/containerd-shim-runsc-v1": testutil.GVisorShimWrapper("/opt/gvisor/containerd-shim-runsc-v1", "/opt/gvisor/uid_map"),
	} {
		if err := os.MkdirAll(filepath.Dir(n.Local(dst)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(n.Local(dst), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	testutil.ImportPause(t, b.Binary("ctr"), n.Socket())
	testutil.ImportBusybox(t, b.Binary("ctr"), n.Socket())
	conn, err := grpc.NewClient("unix://"+n.Socket(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	runGVisorPod(ctx, t, rt)
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// containerd22 returns the project's containerd 2.2 build.
func containerd22(t *testing.T) testutil.ContainerdBuild {
	t.Helper()
	for _, b := range testutil.ContainerdMatrix(t) {
		if b.Name == "2.2" {
			return b
		}
	}
	t.Fatal("containerd 2.2 is not in the matrix")
	return testutil.ContainerdBuild{}
}
