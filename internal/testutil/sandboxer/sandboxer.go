// Package sandboxer builds and runs cmd/fake-sandboxer, a sandbox
// controller daemon serving containerd's sandbox Controller gRPC service on
// a unix socket, for tests of sandboxer shims (proxy plugins of type
// "sandbox"). The daemon records every call it gets; Calls reads them.
package sandboxer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/shimkit/shimkit/internal/testutil"
)

// Build compiles the fake sandboxer into a fresh temporary directory and
// returns the binary's path.
func Build(t testing.TB) string {
	t.Helper()
	return testutil.GoBuild(t, "./internal/testutil/sandboxer/cmd/fake-sandboxer", filepath.Join(t.TempDir(), "fake-sandboxer"))
}

// Daemon is a running fake sandboxer.
type Daemon struct {
	Socket    string // the unix socket it serves
	CallsPath string // where it records calls, one JSON line each
	cmd       *exec.Cmd
	exited    chan struct{}
	stderr    bytes.Buffer
}

// Call is one call the daemon received.
type Call struct {
	Method    string `json:"method"`
	SandboxID string `json:"sandbox_id"`
	Sandboxer string `json:"sandboxer"`
}

// Start runs the binary (from Build) on socket and waits until it accepts
// connections. The daemon is stopped in t.Cleanup; register it before
// anything that still talks to it while cleaning up (a containerd), so that
// it is stopped after.
func Start(t testing.TB, bin, socket string) *Daemon {
	t.Helper()
	d := &Daemon{Socket: socket, CallsPath: filepath.Join(t.TempDir(), "calls.jsonl"), exited: make(chan struct{})}
	d.cmd = exec.Command(bin, "-socket", socket, "-calls", d.CallsPath)
	d.cmd.Stdout, d.cmd.Stderr = &d.stderr, &d.stderr
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.cmd.Start(); err != nil {
		t.Fatalf("start fake-sandboxer: %v", err)
	}
	go func() { _ = d.cmd.Wait(); close(d.exited) }()
	t.Cleanup(func() {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.exited:
		case <-time.After(10 * time.Second):
			_ = d.cmd.Process.Kill()
			<-d.exited
			t.Errorf("fake-sandboxer did not stop on SIGTERM; killed")
		}
		_ = os.Remove(socket)
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.Dial("unix", socket)
		if err == nil {
			conn.Close()
			return d
		}
		select {
		case <-d.exited:
			t.Fatalf("fake-sandboxer exited: %s", d.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("fake-sandboxer does not listen on %s: %v", socket, err)
		}
	}
}

// Calls returns the calls received so far, in order.
func (d *Daemon) Calls() ([]Call, error) {
	data, err := os.ReadFile(d.CallsPath)
	if err != nil {
		return nil, err
	}
	var out []Call
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var c Call
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return nil, fmt.Errorf("%s: %w", d.CallsPath, err)
		}
		out = append(out, c)
	}
	return out, sc.Err()
}
