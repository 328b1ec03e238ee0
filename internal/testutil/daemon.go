package testutil

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// daemon is a container runtime's process a test runs (containerd,
// crio): started once, waited for over CRI, stopped with SIGTERM.
type daemon struct {
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the process has exited
	exitErr error         // what Wait returned, once exited is closed
}

// started records the started process and closes log once it exits.
func (d *daemon) started(cmd *exec.Cmd, log *os.File) {
	d.cmd = cmd
	d.exited = make(chan struct{})
	go func() { d.exitErr = cmd.Wait(); log.Close(); close(d.exited) }()
}

// waitReady polls CRI Status until RuntimeReady is true or the process
// exits.
func (d *daemon) waitReady(ctx context.Context, dial func() (runtimeapi.RuntimeServiceClient, func(), error)) error {
	rt, closeConn, err := dial()
	if err != nil {
		return err
	}
	defer closeConn()
	var last error
	for {
		if last = runtimeReady(ctx, rt); last == nil {
			return nil
		}
		select {
		case <-d.exited:
			return fmt.Errorf("process exited (%w); last CRI error: %w", d.exitErr, last)
		case <-ctx.Done():
			return fmt.Errorf("%w; last CRI error: %w", ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop sends SIGTERM and waits for the process to exit, killing it after
// grace; what names it in the error.
func (d *daemon) stop(ctx context.Context, grace time.Duration, what string) error {
	if d.cmd == nil {
		return nil
	}
	defer func() { d.cmd = nil }()
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
		return nil
	case <-time.After(grace):
	case <-ctx.Done():
	}
	_ = d.cmd.Process.Kill()
	<-d.exited
	return fmt.Errorf("%s did not stop on SIGTERM; killed", what)
}
