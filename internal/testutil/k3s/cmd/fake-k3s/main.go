// Command fake-k3s stands in for the k3s (or rke2) binary of a node in
// tests: "agent" renders containerd's config as k3s's agent does (package
// k3s), starts containerd, tells systemd it is ready once containerd's
// socket answers (Type=notify, as k3s does), then runs the kubelet with
// KUBELET_ARGS when set, starting it again when it exits; SIGTERM stops
// both. A render error exits 1 before containerd starts, as k3s does.
// "server" exits 1 at once: on an agent node the server unit RKE2's
// tarball installs has no configuration, and systemd restarts it in a loop.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"

	"github.com/shimkit/shimkit/internal/testutil/k3s"
)

func main() {
	if len(os.Args) < 2 {
		fail("usage: %s agent|server [flags]", os.Args[0])
	}
	role := os.Args[1]
	fs := flag.NewFlagSet(role, flag.ExitOnError)
	program := fs.String("program", filepath.Base(os.Args[0]), "k3s or rke2")
	dataDir := fs.String("data-dir", "/var/lib/rancher/k3s", "the data directory")
	schema := fs.Int("schema", 3, "the base config's version: 3 (containerd 2) or 2 (containerd 1.7)")
	imports := fs.Bool("imports", true, "the v3 base imports config-v3.toml.d/*.toml")
	root := fs.String("containerd-root", "/var/lib/containerd", "containerd's root")
	pause := fs.String("pause-image", "", "the sandbox image")
	containerd := fs.String("containerd", "/usr/local/bin/containerd", "containerd's binary")
	kubelet := fs.String("kubelet", "/usr/local/bin/kubelet", "the kubelet's binary")
	_ = fs.Parse(os.Args[2:])
	if role == "server" {
		fail("%s server: this node is an agent, no server is configured here", *program)
	}
	if role != "agent" {
		fail("unknown command %q", role)
	}
	a := k3s.Agent{
		Program: *program, DataDir: *dataDir, Generation: k3s.Generation{Schema: *schema, Imports: *imports},
		Root: *root, PauseImage: *pause, CNIBinDir: "/usr/lib/cni", CNIConfDir: "/etc/cni/net.d",
	}
	cfg, err := a.RenderConfig("/", os.Getenv("PATH"))
	if err != nil {
		fail("%s agent: containerd config: %v", *program, err)
	}
	cfgPath := a.ConfigDir() + "/config.toml"
	if err := writeAtomic(cfgPath, cfg); err != nil {
		fail("%s agent: %v", *program, err)
	}
	run(*containerd, cfgPath, *kubelet)
}

// run starts containerd, notifies systemd once its socket accepts, runs
// the kubelet, and waits for SIGTERM or containerd's exit.
func run(containerdBin, cfgPath, kubeletBin string) {
	if err := os.MkdirAll("/run/k3s/containerd", 0o711); err != nil {
		fail("%v", err)
	}
	ctd := exec.Command(containerdBin, "--config", cfgPath)
	ctd.Stdout, ctd.Stderr, ctd.Env = os.Stdout, os.Stderr, childEnv()
	if err := ctd.Start(); err != nil {
		fail("start containerd: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- ctd.Wait() }()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	if err := waitSocket(k3s.Socket, exited); err != nil {
		fail("containerd: %v", err)
	}
	if _, err := daemon.SdNotify(false, daemon.SdNotifyReady); err != nil {
		fmt.Fprintln(os.Stderr, "sd_notify:", err)
	}
	k := &kubeletLoop{bin: kubeletBin, args: strings.Fields(os.Getenv("KUBELET_ARGS")), stop: make(chan struct{})}
	if len(k.args) > 0 {
		k.done.Add(1)
		go k.run()
	}
	select {
	case <-sig:
		_ = ctd.Process.Signal(syscall.SIGTERM)
		k.halt()
		if err := <-exited; err != nil {
			fmt.Fprintln(os.Stderr, "containerd stopped:", err)
		}
		os.Exit(0)
	case err := <-exited:
		k.halt()
		fail("containerd exited: %v", err)
	}
}

func waitSocket(sock string, exited <-chan error) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("exited before its socket answered: %w", err)
		default:
		}
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer within 30 s", sock)
}

// kubeletLoop runs the kubelet as k3s embeds it: for as long as the agent
// runs, started again a second after it exits.
type kubeletLoop struct {
	bin  string
	args []string
	mu   sync.Mutex
	cmd  *exec.Cmd
	stop chan struct{}
	done sync.WaitGroup
}

func (k *kubeletLoop) run() {
	defer k.done.Done()
	for {
		cmd := exec.Command(k.bin, k.args...)
		cmd.Stdout, cmd.Stderr, cmd.Env = os.Stdout, os.Stderr, childEnv()
		k.mu.Lock()
		select {
		case <-k.stop:
			k.mu.Unlock()
			return
		default:
		}
		err := cmd.Start()
		if err == nil {
			k.cmd = cmd
		}
		k.mu.Unlock()
		if err == nil {
			err = cmd.Wait()
		}
		fmt.Fprintf(os.Stderr, "kubelet exited (%v); starting it again\n", err)
		select {
		case <-k.stop:
			return
		case <-time.After(time.Second):
		}
	}
}

func (k *kubeletLoop) halt() {
	k.mu.Lock()
	close(k.stop)
	if k.cmd != nil {
		_ = k.cmd.Process.Signal(syscall.SIGTERM) // an error: it had exited
	}
	k.mu.Unlock()
	k.done.Wait()
}

// childEnv is the environment of containerd and the kubelet: the agent's,
// without systemd's notify socket (the agent alone says when it is ready).
func childEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "NOTIFY_SOCKET=") {
			out = append(out, kv)
		}
	}
	return out
}

func writeAtomic(p string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp := p + ".new"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}
