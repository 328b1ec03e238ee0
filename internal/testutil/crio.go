package testutil

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CRIO is one real crio process (hack/bins.sh builds it from the module
// proxy's github.com/cri-o/cri-o@$CRIO_VERSION) with its own root, runroot,
// socket, config file and drop-in directory under Dir, cgroupfs, vfs
// storage and a policy.json that accepts every image. Debian's conmon and
// crun run its containers.
//
// What it is not: a node's crio.service. It is started and stopped as a
// process here (a node restarts it through systemd); it listens on its own
// socket; its CNI configuration is loopback only (pods use the host's
// network); the machine lacks CAP_SYS_RESOURCE, so a sandbox that keeps
// its infra container (oom_score_adj -998) cannot start, and pods here
// use a pid namespace per container. Debian's crun 1.8.1, CRI-O's default
// runtime here, refuses CRI-O v1.34's runtime spec 1.2.1 ("unknown
// version specified"): containers run on runc. One file is outside Dir:
// containers/image's blob info cache, /var/lib/containers/cache (CRI-O
// v1.34 has no setting for it), shared by every test CRI-O.
type CRIO struct {
	Version   string // CRIO_VERSION of hack/versions.env
	BinDir    string // holds crio and pinns
	Dir       string
	Config    string // crio --config
	DropInDir string // crio --config-dir
	StateDir  string // beside DropInDir, for crioconfig.Target.StateDir
	Socket    string
	// CRI is the CRI endpoint of Socket: its clients and what it reports.
	CRI CRIEndpoint
	// Log is crio's log file.
	Log LogFile
	// PauseImage is pause_image (a registry reference): CRI-O pulls it
	// for a pod sandbox's infra container.
	PauseImage string

	proc daemon
}

// CRIOBinDir returns the cache directory of the CRI-O build and fails the
// test when it, conmon or crun is missing.
func CRIOBinDir(t testing.TB) string {
	t.Helper()
	RequireHarness(t)
	dir := BinDir(t, "crio", "CRIO_VERSION", "crio", "pinns")
	for _, b := range []string{"/usr/bin/conmon", "/usr/bin/crun"} {
		if _, err := os.Stat(b); err != nil {
			t.Fatalf("%v (apt-get install conmon crun containernetworking-plugins)", err)
		}
	}
	return dir
}

// CRIOOption changes how StartCRIO configures crio.
type CRIOOption func(*CRIO)

// WithPauseImage sets pause_image, for tests that run pod sandboxes.
func WithPauseImage(ref string) CRIOOption { return func(c *CRIO) { c.PauseImage = ref } }

// StartCRIO writes the configuration into a fresh directory, starts crio
// on it and waits until CRI reports RuntimeReady. In t.Cleanup it removes
// every pod sandbox, stops crio, and fails the test when a process or
// mount of it is left behind.
func StartCRIO(t testing.TB, opts ...CRIOOption) *CRIO {
	t.Helper()
	c := NewCRIO(t, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// NewCRIO is StartCRIO without starting crio: the test writes drop-ins
// first, or checks that crio refuses to start.
func NewCRIO(t testing.TB, opts ...CRIOOption) *CRIO {
	t.Helper()
	bin := CRIOBinDir(t)
	v, _ := Version("CRIO_VERSION")
	dir, err := os.MkdirTemp("", "crio-") // socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	c := &CRIO{
		Version: v, BinDir: bin, Dir: dir,
		Config:    filepath.Join(dir, "etc/crio/crio.conf"),
		DropInDir: filepath.Join(dir, "etc/crio/crio.conf.d"),
		StateDir:  filepath.Join(dir, "etc/crio/shimkit"),
		Socket:    filepath.Join(dir, "crio.sock"),
		Log:       LogFile(filepath.Join(dir, "crio.log")),
	}
	c.CRI = CRIEndpoint{Socket: c.Socket}
	for _, o := range opts {
		o(c)
	}
	if err := c.writeFiles(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Teardown(context.Background()); err != nil {
			t.Errorf("crio teardown: %v", err)
		}
		if !t.Failed() {
			_ = os.RemoveAll(dir)
		} else {
			t.Logf("crio kept %s for inspection", dir)
		}
	})
	return c
}

// command returns crio with the test's config, config directory and
// registries.conf, and args.
func (c *CRIO) command(ctx context.Context, args ...string) *exec.Cmd {
	all := append([]string{"--config", c.Config, "--config-dir", c.DropInDir, "--registries-conf", c.path("registries.conf")}, args...)
	cmd := exec.CommandContext(ctx, filepath.Join(c.BinDir, "crio"), all...)
	cmd.Env = append(os.Environ(), "CONTAINERS_STORAGE_CONF="+c.path("storage.conf"), "CONTAINERS_REGISTRIES_CONF="+c.path("registries.conf"))
	return cmd
}

// Start starts crio and waits until CRI reports RuntimeReady.
func (c *CRIO) Start(ctx context.Context) error {
	if err := c.StartProcess(); err != nil {
		return err
	}
	if err := c.WaitReady(ctx); err != nil {
		return fmt.Errorf("crio %s did not become ready: %w\n%s", c.Version, err, c.Log.Tail())
	}
	return nil
}

// StartProcess starts crio without waiting for it.
func (c *CRIO) StartProcess() error {
	if c.proc.cmd != nil {
		return errors.New("crio already running")
	}
	logf, err := os.OpenFile(string(c.Log), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := c.command(context.Background(), "--log-level", "info")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start crio %s: %w", c.Version, err)
	}
	c.proc.started(cmd, logf)
	return nil
}

// WaitReady polls CRI Status until RuntimeReady is true or crio exits.
func (c *CRIO) WaitReady(ctx context.Context) error { return c.proc.waitReady(ctx, c.CRI.dial) }

// Stop sends SIGTERM and waits for crio to exit, killing it after 20 s.
func (c *CRIO) Stop(ctx context.Context) error {
	return c.proc.stop(ctx, 20*time.Second, "crio "+c.Version)
}

// Signal sends sig to the running crio (a test of what SIGHUP does; a
// node never reloads CRI-O, see Restart).
func (c *CRIO) Signal(sig os.Signal) error {
	if c.proc.cmd == nil {
		return errors.New("crio is not running")
	}
	return c.proc.cmd.Process.Signal(sig)
}

// Restart stops and starts crio, as `systemctl restart crio` does (never
// SIGHUP: cri-o #10202), and waits until it is ready again.
func (c *CRIO) Restart(ctx context.Context) error {
	if err := c.Stop(ctx); err != nil {
		return err
	}
	return c.Start(ctx)
}

// ConfigOutput returns `crio config` for the test's files: the merged
// configuration CRI-O reads (before it validates the runtimes, which only
// the daemon does).
func (c *CRIO) ConfigOutput(ctx context.Context) ([]byte, error) {
	var stderr bytes.Buffer
	cmd := c.command(ctx, "config")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("crio config: %w: %s", err, stderr.String())
	}
	return out, nil
}

// Teardown removes every pod sandbox through CRI, stops crio, then checks
// that no process or mount under Dir is left; leftovers are cleaned up
// and reported as an error.
func (c *CRIO) Teardown(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var errs []error
	if c.proc.cmd != nil {
		rt, closeConn, err := c.CRI.dial()
		if err == nil {
			errs = append(errs, removeSandboxes(ctx, rt))
			closeConn()
		}
	}
	errs = append(errs, c.Stop(ctx))
	if procs := ProcessesMentioning(c.Dir); len(procs) > 0 {
		for _, p := range procs {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		errs = append(errs, fmt.Errorf("processes left behind: %v", procs))
	}
	if mounts := MountsUnder(c.Dir); len(mounts) > 0 {
		for _, m := range mounts {
			_ = syscall.Unmount(m, syscall.MNT_DETACH)
		}
		errs = append(errs, fmt.Errorf("mounts left behind: %v", mounts))
	}
	errs = append(errs, c.removeCgroups())
	return errors.Join(errs...)
}

// CgroupParent is the cgroup (cgroupfs) the test's pod sandboxes should
// name as their parent (LinuxPodSandboxConfig.CgroupParent), so that
// Teardown finds and removes what CRI-O leaves there (it keeps an empty
// crio-conmon-<id> cgroup of a container now and then).
func (c *CRIO) CgroupParent() string { return "/shimkit-" + filepath.Base(c.Dir) }

// removeCgroups removes CgroupParent, deepest first, from every mounted
// hierarchy; a cgroup that still holds a process is an error.
func (c *CRIO) removeCgroups() error {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*")
	roots = append(roots, "/sys/fs/cgroup")
	var errs []error
	for _, root := range roots {
		top := filepath.Join(root, c.CgroupParent())
		if _, err := os.Stat(top); err != nil {
			continue
		}
		var dirs []string
		_ = filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := os.Remove(dirs[i]); err != nil {
				errs = append(errs, fmt.Errorf("cgroup left behind: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}

// removeSandboxes stops and removes every pod sandbox of the runtime.
func removeSandboxes(ctx context.Context, rt runtimeapi.RuntimeServiceClient) error {
	list, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("list pod sandboxes: %w", err)
	}
	var errs []error
	for _, sb := range list.GetItems() {
		if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			errs = append(errs, fmt.Errorf("stop sandbox %s: %w", sb.Id, err))
		}
		if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			errs = append(errs, fmt.Errorf("remove sandbox %s: %w", sb.Id, err))
		}
	}
	return errors.Join(errs...)
}

// CRIEndpoint is a CRI socket: clients of it, and the handlers it
// announces.
type CRIEndpoint struct{ Socket string }

func (e CRIEndpoint) dial() (runtimeapi.RuntimeServiceClient, func(), error) {
	conn, err := grpc.NewClient("unix://"+e.Socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, fmt.Errorf("dial %s: %w", e.Socket, err)
	}
	return runtimeapi.NewRuntimeServiceClient(conn), func() { conn.Close() }, nil
}

// Runtime returns a CRI runtime client, closed in t.Cleanup.
func (e CRIEndpoint) Runtime(t testing.TB) runtimeapi.RuntimeServiceClient {
	t.Helper()
	rt, closeConn, err := e.dial()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeConn)
	return rt
}

// Images returns a CRI image client, closed in t.Cleanup.
func (e CRIEndpoint) Images(t testing.TB) runtimeapi.ImageServiceClient {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+e.Socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return runtimeapi.NewImageServiceClient(conn)
}

// RuntimeHandlers returns the handler names CRI Status announces (what
// the kubelet puts in node.status.runtimeHandlers).
func (e CRIEndpoint) RuntimeHandlers(ctx context.Context) ([]string, error) {
	rt, closeConn, err := e.dial()
	if err != nil {
		return nil, err
	}
	defer closeConn()
	st, err := rt.Status(ctx, &runtimeapi.StatusRequest{})
	if err != nil {
		return nil, fmt.Errorf("CRI Status: %w", err)
	}
	var names []string
	for _, h := range st.GetRuntimeHandlers() {
		names = append(names, h.Name)
	}
	return names, nil
}

// LogFile is a process's log file.
type LogFile string

// Tail returns its last 40 lines.
func (l LogFile) Tail() string {
	lines := strings.Split(strings.TrimRight(l.String(), "\n"), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}

// String returns the whole log.
func (l LogFile) String() string {
	data, _ := os.ReadFile(string(l))
	return string(data)
}

// Handlers are the runtime handlers the endpoint announces, sorted (CRI-O
// lists them in no fixed order); an error fails t.
func (e CRIEndpoint) Handlers(t testing.TB) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hs, err := e.RuntimeHandlers(ctx)
	if err != nil {
		t.Fatalf("runtime handlers of %s: %v", e.Socket, err)
	}
	slices.Sort(hs)
	return hs
}
