package testutil

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"sync/atomic"
	"syscall"
	"time"
)

// ErrTookTooLong is the error of a command RunBounded stopped at its
// bound.
var ErrTookTooLong = errors.New("did not finish in time")

// RunBounded starts cmd, a command of Command (the leader of its own
// process group), and waits for it at most limit: past it, the group is
// SIGKILLed, and the error wraps ErrTookTooLong and names what was waited
// for, so a long wait fails on its own bound, long before the package's
// test timeout. It returns the command's combined output.
func RunBounded(cmd *exec.Cmd, what string, limit time.Duration) ([]byte, error) {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// A process that left the group may hold the output open: Wait
	// stops reading it this long after the command exits.
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	var stopped atomic.Bool
	timer := time.AfterFunc(limit, func() {
		stopped.Store(true)
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	})
	err := cmd.Wait()
	timer.Stop()
	if stopped.Load() {
		return out.Bytes(), fmt.Errorf("%s %w: stopped after %s", what, ErrTookTooLong, time.Since(start).Round(time.Second))
	}
	if err != nil {
		return out.Bytes(), fmt.Errorf("%s: %w", what, err)
	}
	return out.Bytes(), nil
}
