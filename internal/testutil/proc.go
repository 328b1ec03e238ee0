package testutil

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"
)

// Command returns a command the test owns: exec.Command(name, args...) in
// a process group of its own, which dies with the test. When the test
// ends or fails, t.Cleanup SIGKILLs the whole group, so what the command
// started in it (make's go build and the compilers under it) goes too,
// whether or not the test waited for the command. And should the test
// binary die without running t.Cleanup (go test -timeout panics and
// exits), the kernel SIGKILLs the command itself (Pdeathsig; what it
// started is hack/reaper's to end).
//
// Keep the SysProcAttr it sets: the cleanup signals the group the
// command leads.
func Command(t testing.TB, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	t.Cleanup(func() { killGroup(t, cmd) })
	return cmd
}

// killGroup SIGKILLs the process group of a started command. A group
// whose processes are all gone is no error.
func killGroup(t testing.TB, cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		t.Errorf("kill the process group of %s (pid %d): %v", cmd.Path, cmd.Process.Pid, err)
	}
}
