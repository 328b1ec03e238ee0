package testutil

import (
	"bufio"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

//go:embed nodeboot.sh
var nodeBoot string

// Node is a machine booted for a test: a copy-on-write copy of the cached
// Debian root filesystem (hack/node-rootfs.sh), with real systemd as PID 1
// in new PID, mount, UTS, IPC, network and cgroup namespaces, and
// containerd running inside as a systemd unit, exactly like a node. Code
// under test runs outside it with Root as its host root, the way the
// installer's privileged Job does.
type Node struct {
	// Root is the node's / as seen from here.
	Root string
	// Pid is the node's systemd, as seen from here.
	Pid int

	dir     string
	cmd     *exec.Cmd
	cgroups []string
	exited  chan struct{}
	// socket and unit are containerd's CRI socket and systemd unit (""
	// for /run/containerd/containerd.sock and containerd.service).
	socket, unit string
}

// NodeOptions change the node before it boots.
type NodeOptions struct {
	// Containerd, when set, replaces Debian's containerd 1.6 with that
	// build (binaries in /usr/local/bin, config from MinimalConfig).
	Containerd *ContainerdBuild
	// Files are written into the root filesystem (node path → content),
	// Executables too, executable.
	Files, Executables map[string][]byte
	// HostNetwork shares this machine's network namespace instead of a
	// fresh one, so a kubelet in the node reaches an API server on
	// loopback.
	HostNetwork bool
	// K3s lays the node out as k3s does (k3snode.go): containerd (the
	// Containerd build, required) and the kubelet in one unit,
	// k3s-agent.service.
	K3s bool
	// K3sOld makes the k3s-style node a k3s before the base config imported
	// config-v3.toml.d/*.toml (k3s PR #13680): a handler goes to a
	// template there.
	K3sOld bool
	// RKE2 makes the k3s-style node an RKE2 agent installed from the
	// tarball: rke2-server.service and rke2-agent.service both loaded, the
	// agent running (K3s is implied).
	RKE2 bool
	// ReadOnly are node directories mounted read-only inside the node
	// (/etc, /opt: an immutable or hardened host). Files are written
	// before, and the host side (Local) stays writable.
	ReadOnly []string
	// OwnBootID gives the node a boot ID of its own, which a reboot's
	// stand-in (Cluster.Reboot) changes, in place of this machine's. Only
	// its systemd, runtime and kubelet read it: its containers read this
	// machine's. On nodes with one, the kubelet killed a running image
	// volume pod after a containerd restart (the e2e images scenario; not
	// without one, cause not found), so only the nodes a test reboots
	// have one.
	OwnBootID bool
	// CRIO makes the node a CRI-O node (crionode.go): crio.service under
	// systemd in place of containerd (Socket and Unit are CRI-O's).
	CRIO bool
	// Plug, when set, is called as soon as the node's init runs, before
	// StartNode waits for its runtime: a cluster node's network is plugged
	// then, as a machine has its network while it boots (a unit before
	// the runtime may need it: an install at boot).
	Plug func(*Node) error
}

// inotifyInstances is how many inotify instances the machine's root may
// open, at least, while node sandboxes run: each node's systemd,
// containerd and kubelet open several, and a dozen nodes at once exhaust
// the kernel's default of 128 ("too many open files" from containerd's
// CNI watcher).
const inotifyInstances = 1024

// raiseInotifyInstances raises fs.inotify.max_user_instances to
// inotifyInstances when it is lower (as root; otherwise it stays).
func raiseInotifyInstances() {
	const p = "/proc/sys/fs/inotify/max_user_instances"
	data, err := os.ReadFile(p)
	if err != nil {
		return
	}
	if n, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && n < inotifyInstances {
		_ = os.WriteFile(p, []byte(strconv.Itoa(inotifyInstances)), 0o644)
	}
}

// NodeRootfs returns the cached root filesystem, failing the test when it
// has not been built (make bins).
func NodeRootfs(t testing.TB) string {
	t.Helper()
	v, err := Version("NODE_ROOTFS_VERSION")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(CacheDir(), "node-rootfs-"+v, "rootfs")
	if _, err := os.Stat(filepath.Join(dir, "lib/systemd/systemd")); err != nil {
		t.Fatalf("node root filesystem: %v (build it with `make bins`)", err)
	}
	return dir
}

// StartNode boots a node and waits until containerd answers CRI. It is
// torn down in t.Cleanup, which fails the test if a process, mount or
// cgroup of it is left.
func StartNode(t testing.TB, opts NodeOptions) *Node {
	t.Helper()
	RequireHarness(t)
	raiseInotifyInstances()
	lower := NodeRootfs(t)
	if opts.CRIO {
		lower = crioNodeLayer(t) + ":" + lower
	}
	dir, err := os.MkdirTemp("", "node-")
	if err != nil {
		t.Fatal(err)
	}
	n := &Node{dir: dir, Root: filepath.Join(dir, "root"), exited: make(chan struct{})}
	t.Cleanup(func() {
		if err := n.teardown(); err != nil {
			t.Errorf("node teardown: %v", err)
		}
	})
	for _, d := range []string{"upper", "work", "root"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	data := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", lower, filepath.Join(dir, "upper"), filepath.Join(dir, "work"))
	if err := syscall.Mount("overlay", n.Root, "overlay", 0, data); err != nil {
		t.Fatalf("mount overlay: %v", err)
	}
	if opts.Containerd != nil {
		n.useContainerd(t, *opts.Containerd)
	}
	if opts.CRIO {
		n.useCRIO(t)
	}
	if opts.K3s || opts.RKE2 {
		if opts.Containerd == nil {
			t.Fatal("StartNode: a k3s-style node needs NodeOptions.Containerd")
		}
		n.useK3sLayout(t, *opts.Containerd, opts)
	}
	// Every machine has its own ID (the cached root's would make every
	// node the same machine, and a reimage would not change it).
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/etc/machine-id", "/var/lib/dbus/machine-id"} {
		_ = os.Remove(n.Local(p))
		if err := os.WriteFile(n.Local(p), []byte(hex.EncodeToString(id)+"\n"), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	bootID := ""
	if opts.OwnBootID {
		bootID = bootIDFile(dir)
		if err := newBoot(dir); err != nil {
			t.Fatal(err)
		}
	}
	for files, mode := range map[*map[string][]byte]os.FileMode{&opts.Files: 0o644, &opts.Executables: 0o755} {
		for p, content := range *files {
			n.writeFiles(t, map[string]nodeFile{p: {content, mode}})
		}
	}
	// containerd's overlayfs snapshotter cannot put its layers on the
	// node's overlay root: give /var/lib/containerd a real directory.
	varlib := filepath.Join(dir, "var-lib-containerd")
	if err := os.MkdirAll(varlib, 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(n.Local("/var/lib/containerd"), 0o711); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount(varlib, n.Local("/var/lib/containerd"), "", syscall.MS_BIND, ""); err != nil {
		t.Fatalf("bind /var/lib/containerd: %v", err)
	}
	// A tmpfs the host and the node share: the node's sockets show here.
	if err := syscall.Mount("tmpfs", filepath.Join(n.Root, "run"), "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=755"); err != nil {
		t.Fatalf("mount /run: %v", err)
	}
	if n.cgroups, err = makeNodeCgroups(filepath.Base(dir)); err != nil {
		t.Fatal(err)
	}
	bootPath := filepath.Join(dir, "boot.sh")
	if err := os.WriteFile(bootPath, []byte(nodeBoot), 0o755); err != nil {
		t.Fatal(err)
	}
	// The shell joins the node's cgroups, then becomes unshare, whose child
	// becomes systemd.
	script := `for c in $CGROUPS; do echo $$ > "$c/cgroup.procs"; done
exec unshare --pid --fork --mount --uts --ipc $NET --cgroup --kill-child -- /bin/sh "$BOOT" "$ROOT"`
	netFlag, netMode := "--net", ""
	if opts.HostNetwork {
		netFlag, netMode = "", "host"
	}
	n.cmd = exec.Command("/bin/sh", "-c", script)
	n.cmd.Env = append(os.Environ(), "CGROUPS="+strings.Join(n.cgroups, " "), "BOOT="+bootPath, "ROOT="+n.Root, "NET="+netFlag, "NODE_NET="+netMode, "NODE_RO="+strings.Join(opts.ReadOnly, " "), "NODE_CRIO="+crioQuirks(opts), "NODE_BOOT_ID="+bootID)
	logf, err := os.Create(filepath.Join(dir, "boot.log"))
	if err != nil {
		t.Fatal(err)
	}
	n.cmd.Stdout, n.cmd.Stderr = logf, logf
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := n.cmd.Start(); err != nil {
		t.Fatalf("start node: %v", err)
	}
	go func() { _ = n.cmd.Wait(); logf.Close(); close(n.exited) }()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := n.waitBooted(ctx, opts.Plug); err != nil {
		boot, _ := os.ReadFile(filepath.Join(dir, "boot.log"))
		t.Fatalf("node did not boot: %v\nboot log:\n%s\n%s", err, boot, n.Journal(n.Unit()))
	}
	return n
}

// useContainerd puts a containerd build into the node in place of
// Debian's.
func (n *Node) useContainerd(t testing.TB, b ContainerdBuild) {
	t.Helper()
	for _, bin := range []string{"containerd", "ctr", "containerd-shim-runc-v2"} {
		if err := copyExecutable(b.Binary(bin), filepath.Join(n.Root, "usr/local/bin", bin)); err != nil {
			t.Fatal(err)
		}
	}
	dropIn := filepath.Join(n.Root, "etc/systemd/system/containerd.service.d")
	if err := os.MkdirAll(dropIn, 0o755); err != nil {
		t.Fatal(err)
	}
	unit := "[Service]\nExecStart=\nExecStart=/usr/local/bin/containerd\n"
	if err := os.WriteFile(filepath.Join(dropIn, "shimkit-test.conf"), []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(n.Root, "etc/containerd/config.toml"), b.MinimalConfig(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// makeNodeCgroups creates the node's cgroup in every hierarchy this process
// sees, below its own cgroup there.
func makeNodeCgroups(name string) ([]string, error) {
	own := map[string]string{} // controllers → own path
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 {
			own[parts[1]] = parts[2]
		}
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := indexOf(fields, "-")
		if sep < 0 || sep+3 >= len(fields) {
			continue
		}
		fsType, opts, mp := fields[sep+1], fields[sep+3], fields[4]
		var key string
		switch fsType {
		case "cgroup2":
			key = ""
		case "cgroup":
			for _, o := range strings.Split(opts, ",") {
				if o != "rw" && o != "ro" && o != "relatime" && o != "nosuid" && o != "nodev" && o != "noexec" {
					if key != "" {
						key += ","
					}
					key += o
				}
			}
		default:
			continue
		}
		path, ok := own[key]
		if !ok {
			continue
		}
		cg := filepath.Join(mp, path, "shimkit-"+name)
		if err := os.Mkdir(cg, 0o755); err != nil {
			continue // the read-only combined links cannot be mkdir'ed
		}
		if strings.Contains(key, "cpuset") {
			for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
				v, _ := os.ReadFile(filepath.Join(mp, path, file))
				_ = os.WriteFile(filepath.Join(cg, file), v, 0o644)
			}
		}
		out = append(out, cg)
	}
	return out, nil
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// waitBooted waits for systemd's D-Bus socket and for containerd's CRI.
func (n *Node) waitBooted(ctx context.Context, plug func(*Node) error) error {
	for n.Pid == 0 {
		select {
		case <-n.exited:
			return errors.New("the sandbox exited")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		n.Pid = childOf(n.cmd.Process.Pid)
	}
	if plug != nil {
		if err := plug(n); err != nil {
			return fmt.Errorf("plug the node's network: %w", err)
		}
	}
	sock := n.Socket()
	var last error
	for {
		if _, err := os.Stat(n.Local("/run/dbus/system_bus_socket")); err != nil {
			last = err
		} else if last = criReady(ctx, sock); last == nil {
			return nil
		}
		select {
		case <-n.exited:
			return fmt.Errorf("the sandbox exited (last: %w)", last)
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %w)", ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func criReady(ctx context.Context, sock string) error {
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	return runtimeReady(ctx, runtimeapi.NewRuntimeServiceClient(conn))
}

// childOf returns the first child of pid, or 0.
func childOf(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return 0
	}
	c, _ := strconv.Atoi(fields[0])
	return c
}

// Local maps a node path to this machine.
func (n *Node) Local(nodePath string) string { return filepath.Join(n.Root, nodePath) }

// Socket is containerd's CRI socket as seen from here (CRI-O's on a CRI-O
// node).
func (n *Node) Socket() string {
	if n.socket != "" {
		return n.Local(n.socket)
	}
	return n.Local("/run/containerd/containerd.sock")
}

// Unit is the systemd unit that runs containerd: containerd, or k3s-agent
// on a k3s-style node; crio (CRI-O) on a CRI-O node.
func (n *Node) Unit() string {
	if n.unit != "" {
		return n.unit
	}
	return "containerd"
}

// UnitProp reads a property of one of the node's systemd units
// (systemctl show); an error fails t.
func (n *Node) UnitProp(t testing.TB, unit, prop string) string {
	t.Helper()
	out, err := n.Exec(context.Background(), "systemctl", "show", "-p", prop, "--value", unit)
	if err != nil {
		t.Fatalf("systemctl show -p %s %s: %v %s", prop, unit, err, out)
	}
	return strings.TrimSpace(string(out))
}

// Exec runs a command inside the node (all its namespaces, its root).
func (n *Node) Exec(ctx context.Context, args ...string) ([]byte, error) {
	full := append([]string{"-t", strconv.Itoa(n.Pid), "-m", "-p", "-u", "-i", "-n", "-C", "-r", "-w", "--"}, args...)
	return exec.CommandContext(ctx, "nsenter", full...).CombinedOutput()
}

// Journal returns the node's journal for a unit (best effort, for failure
// messages).
func (n *Node) Journal(unit string) string {
	if n.Pid == 0 {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, _ := n.Exec(ctx, "journalctl", "--no-pager", "-n", "40", "-u", unit)
	return string(out)
}

// ContainerdStarts counts the starts of containerd's unit (Unit) in the
// node's journal ("Started containerd...", systemd's own line).
func (n *Node) ContainerdStarts(t testing.TB) int {
	t.Helper()
	out, err := n.Exec(context.Background(), "journalctl", "--no-pager", "-o", "cat", "-u", n.Unit())
	if err != nil {
		t.Fatalf("journalctl: %v %s", err, out)
	}
	count := 0
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "Started "+n.Unit()) {
			count++
		}
	}
	return count
}

// teardown kills every process of the node (its PID namespace goes with
// its init), removes its cgroups and mounts, and reports leftovers.
func (n *Node) teardown() error {
	var errs []error
	if n.cmd != nil && n.cmd.Process != nil {
		_ = n.cmd.Process.Kill()
		if n.Pid != 0 {
			_ = syscall.Kill(n.Pid, syscall.SIGKILL)
		}
		select {
		case <-n.exited:
		case <-time.After(30 * time.Second):
			errs = append(errs, errors.New("the node did not exit"))
		}
	}
	for _, cg := range n.cgroups {
		if err := removeCgroup(cg); err != nil {
			errs = append(errs, err)
		}
	}
	for _, m := range MountsUnder(n.dir) {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
			errs = append(errs, fmt.Errorf("unmount %s: %w", m, err))
		}
	}
	if left := MountsUnder(n.dir); len(left) > 0 {
		errs = append(errs, fmt.Errorf("mounts left: %v", left))
	}
	if len(errs) == 0 {
		_ = os.RemoveAll(n.dir)
	}
	return errors.Join(errs...)
}

// removeCgroup removes a cgroup and its children once their processes are
// gone (they die with the node's PID namespace, asynchronously).
func removeCgroup(cg string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var dirs []string
		_ = filepath.WalkDir(cg, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		var last error
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := os.Remove(dirs[i]); err != nil && !os.IsNotExist(err) {
				last = err
			}
		}
		if last == nil {
			return nil
		}
		if time.Now().After(deadline) {
			procs, _ := os.ReadFile(filepath.Join(cg, "cgroup.procs"))
			return fmt.Errorf("cgroup %s left (processes %q): %w", cg, strings.Fields(string(procs)), last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// nodeFile is a file a node type puts on the node: its content and mode.
type nodeFile struct {
	data []byte
	mode os.FileMode
}

// writeFiles writes each node path of files, making its directory.
func (n *Node) writeFiles(t testing.TB, files map[string]nodeFile) {
	t.Helper()
	for p, f := range files {
		local := n.Local(p)
		if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(local, f.data, f.mode); err != nil {
			t.Fatal(err)
		}
	}
}

// symlink makes each node path of links (a unit, a wants link) a symlink
// to its target, replacing what is there.
func (n *Node) symlink(t testing.TB, links map[string]string) {
	t.Helper()
	for p, target := range links {
		local := n.Local(p)
		if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
			t.Fatal(err)
		}
		_ = os.Remove(local)
		if err := os.Symlink(target, local); err != nil {
			t.Fatal(err)
		}
	}
}
