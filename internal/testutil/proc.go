package testutil

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// diesWithParent writes into dir an executable script named as bin that
// runs bin with the parent death signal SIGKILL (setpriv --pdeathsig),
// and returns the script's path. Started in bin's place by code that sets
// no Pdeathsig (envtest), bin then dies with the process that started it,
// t.Cleanup run or not: the script and setpriv exec in place, so bin keeps
// the pid that was started (and is stopped as that), and the death signal
// survives both execs.
func diesWithParent(t testing.TB, dir, bin string) string {
	t.Helper()
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatalf("%s must die with the test: setpriv (util-linux) makes it, and is missing: %v",
			filepath.Base(bin), err)
	}
	script := filepath.Join(dir, filepath.Base(bin))
	body := fmt.Sprintf("#!/bin/sh\nexec %s --pdeathsig KILL -- %s \"$@\"\n", shellQuote(setpriv), shellQuote(bin))
	// Written holding ForkLock, so that no process this one forks
	// meanwhile holds the script open for writing: exec'd, it would
	// fail with ETXTBSY.
	syscall.ForkLock.RLock()
	err = os.WriteFile(script, []byte(body), 0o755)
	syscall.ForkLock.RUnlock()
	if err != nil {
		t.Fatalf("write the wrapper of %s: %v", bin, err)
	}
	return script
}

// shellQuote quotes s as one word for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
