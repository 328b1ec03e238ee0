package testutil

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ContainerdBuild is one containerd of the test matrix: a directory holding
// containerd, ctr and containerd-shim-runc-v2 of one version.
type ContainerdBuild struct {
	Name    string // short name for subtests: "1.6-debian", "1.7", "2.2", "2.3"
	Version string // what `containerd --version` reports, e.g. "v2.2.9"
	Dir     string
	Major   int // 1 or 2
}

// Binary returns the path of a binary of this build.
func (b ContainerdBuild) Binary(name string) string { return filepath.Join(b.Dir, name) }

var debianVersion = regexp.MustCompile(`containerd \S+ (\d+\.\d+\.\d+)`)

// ContainerdMatrix returns every containerd the project tests against:
// Debian's package and the cached builds of hack/bins.sh. It fails the test
// when one is missing.
func ContainerdMatrix(t testing.TB) []ContainerdBuild {
	t.Helper()
	RequireHarness(t)
	out, err := exec.Command("/usr/bin/containerd", "--version").Output()
	if err != nil {
		t.Fatalf("Debian containerd: %v (apt-get install containerd runc)", err)
	}
	m := debianVersion.FindSubmatch(out)
	if m == nil {
		t.Fatalf("Debian containerd: cannot read version from %q", out)
	}
	if _, err := exec.LookPath("runc"); err != nil {
		t.Fatalf("runc: %v (apt-get install runc)", err)
	}
	builds := []ContainerdBuild{{Name: "1.6-debian", Version: "v" + string(m[1]), Dir: "/usr/bin", Major: 1}}
	for _, b := range []struct{ name, key string }{
		{"1.7", "CONTAINERD_17_VERSION"},
		{"2.2", "CONTAINERD_22_VERSION"},
		{"2.3", "CONTAINERD_23_VERSION"},
	} {
		v, err := Version(b.key)
		if err != nil {
			t.Fatal(err)
		}
		dir := BinDir(t, "containerd", b.key, "containerd", "ctr", "containerd-shim-runc-v2")
		major := 2
		if strings.HasPrefix(v, "v1.") {
			major = 1
		}
		builds = append(builds, ContainerdBuild{Name: b.name, Version: v, Dir: dir, Major: major})
	}
	return builds
}

// DefaultConfig returns the output of `containerd config default` of this
// build.
func (b ContainerdBuild) DefaultConfig(t testing.TB) []byte {
	t.Helper()
	out, err := exec.Command(b.Binary("containerd"), "config", "default").Output()
	if err != nil {
		t.Fatalf("containerd %s config default: %v", b.Version, err)
	}
	return out
}

// MinimalConfig returns the smallest config that lets this build run CRI
// sandboxes on this machine kind (which lacks CAP_SYS_RESOURCE) beside other
// containerd processes.
func (b ContainerdBuild) MinimalConfig() []byte {
	if b.Major == 1 {
		return []byte("version = 2\n\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  restrict_oom_score_adj = true\n  sandbox_image = \"" + PauseImageRef + "\"\n")
	}
	return []byte("version = 3\n\n[plugins.\"io.containerd.cri.v1.runtime\"]\n  restrict_oom_score_adj = true\n\n" +
		"[plugins.\"io.containerd.cri.v1.images\".pinned_images]\n  sandbox = \"" + PauseImageRef + "\"\n\n" +
		"[plugins.\"io.containerd.nri.v1.nri\"]\n  disable = true\n")
}

// Containerd is one real containerd process with its own root, state
// directory, socket and config file.
type Containerd struct {
	Build      ContainerdBuild
	Dir        string // holds root/, state/, the config and the log
	Root       string
	State      string
	Socket     string
	ConfigPath string
	LogPath    string

	// Path is prepended to containerd's PATH (after the build's directory).
	Path string

	proc daemon
}

// StartContainerd writes config to a fresh directory, starts containerd on it
// and waits until CRI reports RuntimeReady. In t.Cleanup it removes every pod
// sandbox, stops containerd and fails the test if a process or mount of it is
// left behind.
func StartContainerd(t testing.TB, b ContainerdBuild, config []byte, opts ...ContainerdOption) *Containerd {
	t.Helper()
	// Unix socket paths are limited to 108 bytes; t.TempDir() can be longer.
	dir, err := os.MkdirTemp("", "ctd-")
	if err != nil {
		t.Fatal(err)
	}
	c := &Containerd{
		Build:      b,
		Dir:        dir,
		Root:       filepath.Join(dir, "root"),
		State:      filepath.Join(dir, "state"),
		Socket:     filepath.Join(dir, "c.sock"),
		ConfigPath: filepath.Join(dir, "config.toml"),
		LogPath:    filepath.Join(dir, "containerd.log"),
	}
	for _, o := range opts {
		o(c)
	}
	if err := os.WriteFile(c.ConfigPath, config, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Teardown(context.Background()); err != nil {
			t.Errorf("containerd %s teardown: %v", b.Version, err)
		}
		if !t.Failed() {
			_ = os.RemoveAll(dir)
		} else {
			t.Logf("containerd %s kept %s for inspection", b.Version, dir)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// ContainerdOption changes how StartContainerd runs containerd.
type ContainerdOption func(*Containerd)

// WithPath puts dir on containerd's PATH, where it looks for shims.
func WithPath(dir string) ContainerdOption { return func(c *Containerd) { c.Path = dir } }

// Start starts the process and waits until CRI reports RuntimeReady.
func (c *Containerd) Start(ctx context.Context) error {
	if err := c.startProcess(); err != nil {
		return err
	}
	if err := c.WaitReady(ctx); err != nil {
		return fmt.Errorf("containerd %s did not become ready: %w\n%s", c.Build.Version, err, c.LogTail())
	}
	return nil
}

// RestartProcess stops and starts containerd without waiting for it to be
// ready, as a process supervisor does; whoever restarts checks health.
func (c *Containerd) RestartProcess(ctx context.Context) error {
	if err := c.Stop(ctx); err != nil {
		return err
	}
	return c.startProcess()
}

func (c *Containerd) startProcess() error {
	if c.proc.cmd != nil {
		return errors.New("containerd already running")
	}
	logf, err := os.OpenFile(c.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(c.Build.Binary("containerd"),
		"--config", c.ConfigPath, "--root", c.Root, "--state", c.State, "--address", c.Socket)
	path := c.Build.Dir + ":" + os.Getenv("PATH")
	if c.Path != "" {
		path = c.Build.Dir + ":" + c.Path + ":" + os.Getenv("PATH")
	}
	cmd.Env = append(os.Environ(), "PATH="+path)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start containerd %s: %w", c.Build.Version, err)
	}
	c.proc.started(cmd, logf)
	return nil
}

// Pid returns the process id of the running containerd, or 0.
func (c *Containerd) Pid() int {
	if c.proc.cmd == nil {
		return 0
	}
	return c.proc.cmd.Process.Pid
}

// WaitReady polls CRI Status until RuntimeReady is true or the process exits.
func (c *Containerd) WaitReady(ctx context.Context) error { return c.proc.waitReady(ctx, c.dial) }

// Stop sends SIGTERM and waits for the process to exit, killing it after
// 15 seconds.
func (c *Containerd) Stop(ctx context.Context) error {
	return c.proc.stop(ctx, 15*time.Second, "containerd "+c.Build.Version)
}

// Restart stops and starts containerd and waits until it is ready again.
func (c *Containerd) Restart(ctx context.Context) error {
	if err := c.Stop(ctx); err != nil {
		return err
	}
	return c.Start(ctx)
}

// Runtime returns a CRI runtime client connected to this containerd; the
// connection is closed in t.Cleanup.
func (c *Containerd) Runtime(t testing.TB) runtimeapi.RuntimeServiceClient {
	t.Helper()
	rt, closeConn, err := c.dial()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeConn)
	return rt
}

func (c *Containerd) dial() (runtimeapi.RuntimeServiceClient, func(), error) {
	return CRIEndpoint{Socket: c.Socket}.dial()
}

// ConfigDump returns `containerd config dump` for the config file: the
// effective configuration after migration and imports.
func (c *Containerd) ConfigDump(ctx context.Context) ([]byte, error) {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, c.Build.Binary("containerd"), "--config", c.ConfigPath, "config", "dump")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("containerd %s config dump: %w: %s", c.Build.Version, err, stderr.String())
	}
	return out, nil
}

// LogTail returns the last lines of the containerd log.
func (c *Containerd) LogTail() string {
	data, _ := os.ReadFile(c.LogPath)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

// CRIConfig returns the CRI plugin's effective configuration, as its verbose
// Status reports it (the "config" JSON), and the runtime handlers it
// announces (containerd 2.x only; nil on 1.x).
func (c *Containerd) CRIConfig(ctx context.Context) (map[string]any, []string, error) {
	rt, closeConn, err := c.dial()
	if err != nil {
		return nil, nil, err
	}
	defer closeConn()
	st, err := rt.Status(ctx, &runtimeapi.StatusRequest{Verbose: true})
	if err != nil {
		return nil, nil, fmt.Errorf("CRI Status: %w", err)
	}
	cfg := map[string]any{}
	if err := json.Unmarshal([]byte(st.Info["config"]), &cfg); err != nil {
		return nil, nil, fmt.Errorf("CRI Status config: %w", err)
	}
	var handlers []string
	for _, h := range st.GetRuntimeHandlers() {
		handlers = append(handlers, h.Name)
	}
	return cfg, handlers, nil
}

// runtimeReady asks CRI Status once whether RuntimeReady is true.
func runtimeReady(ctx context.Context, rt runtimeapi.RuntimeServiceClient) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st, err := rt.Status(ctx, &runtimeapi.StatusRequest{})
	if err != nil {
		return err
	}
	for _, cond := range st.GetStatus().GetConditions() {
		if cond.Type == runtimeapi.RuntimeReady && cond.Status {
			return nil
		}
	}
	return fmt.Errorf("RuntimeReady is not true: %v", st.GetStatus().GetConditions())
}

// ShimOf returns the path of the shim binary running a pod sandbox (as
// the node sees it), found among the processes that name the sandbox.
func ShimOf(sandboxID string) (string, bool) {
	_, exe, ok := shimProcess(sandboxID)
	return exe, ok
}

// ShimPID returns the pid (as seen here) of the shim process that serves
// a pod sandbox; t fails when there is none.
func ShimPID(t testing.TB, sandboxID string) int {
	t.Helper()
	pid, _, ok := shimProcess(sandboxID)
	if !ok {
		t.Fatalf("no shim process serves sandbox %s", sandboxID)
	}
	return pid
}

func shimProcess(sandboxID string) (int, string, bool) {
	for _, pid := range ProcessesMentioning(sandboxID) {
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err == nil && strings.Contains(filepath.Base(exe), "containerd-shim") {
			return pid, exe, true
		}
	}
	return 0, "", false
}
