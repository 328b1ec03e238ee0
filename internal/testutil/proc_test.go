package testutil_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shimkit/shimkit/internal/testutil"
)

// helperEnv names the helper test a re-executed test binary is: the
// process the test that started it kills.
const helperEnv = "SHIMKIT_TESTUTIL_HELPER"

// TestCommandKillsItsGroup ends a subtest whose command started a
// grandchild in its process group: the grandchild and the command die
// with the subtest, though it never waited for them.
func TestCommandKillsItsGroup(t *testing.T) {
	var cmd *exec.Cmd
	var grandchild int
	t.Run("owner", func(t *testing.T) {
		cmd = testutil.Command(t, "sh", "-c", "sleep 300 & echo sleep $!; wait")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pids, err := readPIDs(out, 10*time.Second, "sleep")
		if err != nil {
			t.Fatal(err)
		}
		grandchild = pids["sleep"]
		if !running(grandchild) {
			t.Fatalf("sleep %d is not running", grandchild)
		}
	})
	if grandchild == 0 {
		t.FailNow()
	}
	t.Cleanup(func() { _ = syscall.Kill(grandchild, syscall.SIGKILL) })
	if err := waitDead(grandchild, 5*time.Second); err != nil {
		t.Errorf("the grandchild in the command's group: %v", err)
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if err := cmd.Wait(); !killed(err) {
		t.Errorf("the command ended %v, want killed by SIGKILL", err)
	}
}

// TestCommandDiesWithTheTest SIGKILLs a test process (the helper
// TestHelperCommand) that started a command: no t.Cleanup runs, and the
// command dies with it.
func TestCommandDiesWithTheTest(t *testing.T) {
	helper, out, stderr := startHelper(t, "TestHelperCommand", "command")
	pids, err := readPIDs(out, 10*time.Second, "sleep")
	if err != nil {
		t.Fatalf("%v; the helper's stderr:\n%s", err, stderr)
	}
	sleep := pids["sleep"]
	t.Cleanup(func() { _ = syscall.Kill(sleep, syscall.SIGKILL) })
	if !running(sleep) {
		t.Fatalf("the helper's sleep %d is not running", sleep)
	}
	if err := helper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()
	if err := waitDead(sleep, 5*time.Second); err != nil {
		t.Errorf("the helper's command: %v", err)
	}
}

// TestHelperCommand is the test process TestCommandDiesWithTheTest kills:
// it starts a command and waits to be killed.
func TestHelperCommand(t *testing.T) {
	if os.Getenv(helperEnv) != "command" {
		t.Skip("the helper process of TestCommandDiesWithTheTest")
	}
	cmd := testutil.Command(t, "sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("sleep %d\n", cmd.Process.Pid)
	time.Sleep(time.Minute)
}

// startHelper re-executes the test binary as the helper test name, with
// helperEnv set to mode. It returns the helper, its standard output and
// its standard error (to read once it has exited).
func startHelper(t *testing.T, name, mode string, env ...string) (*exec.Cmd, io.Reader, *bytes.Buffer) {
	t.Helper()
	helper := testutil.Command(t, os.Args[0], "-test.run=^"+name+"$")
	helper.Env = append(append(os.Environ(), helperEnv+"="+mode), env...)
	var stderr bytes.Buffer
	helper.Stderr = &stderr
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatalf("start the helper %s: %v", name, err)
	}
	return helper, out, &stderr
}

// readPIDs reads lines "NAME PID" from r until it has a pid for each
// name, waiting at most d. Other lines are kept for the error.
func readPIDs(r io.Reader, d time.Duration, names ...string) (map[string]int, error) {
	type read struct {
		pids  map[string]int
		other []string
	}
	done := make(chan read, 1)
	go func() {
		got := read{pids: make(map[string]int)}
		for sc := bufio.NewScanner(r); len(got.pids) < len(names) && sc.Scan(); {
			name, pid, _ := strings.Cut(sc.Text(), " ")
			n, err := strconv.Atoi(pid)
			if err != nil || !slices.Contains(names, name) {
				got.other = append(got.other, sc.Text())
				continue
			}
			got.pids[name] = n
		}
		done <- got
	}()
	select {
	case got := <-done:
		if len(got.pids) < len(names) {
			return nil, fmt.Errorf("read pids %v of %v; the other lines:\n%s", got.pids, names, strings.Join(got.other, "\n"))
		}
		return got.pids, nil
	case <-time.After(d):
		return nil, fmt.Errorf("no pids of %v within %v", names, d)
	}
}

// running reports whether pid is a process that has not exited (a
// zombie has).
func running(pid int) bool {
	state, _, ok := stat(pid)
	return ok && state != "Z"
}

// stat returns a process's state and parent from /proc/PID/stat.
func stat(pid int) (state string, ppid int, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, false
	}
	// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	if len(fields) < 2 {
		return "", 0, false
	}
	ppid, err = strconv.Atoi(fields[1])
	return fields[0], ppid, err == nil
}

// waitDead waits up to d for pid to exit.
func waitDead(pid int, d time.Duration) error {
	for deadline := time.Now().Add(d); running(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("pid %d still runs %v on", pid, d)
		}
	}
	return nil
}

// killed reports whether a command's Wait says SIGKILL ended it.
func killed(err error) bool {
	ee, ok := err.(*exec.ExitError)
	return ok && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL
}

// childrenByExe returns the children of pid by the base name of their
// executable (/proc/PID/exe).
func childrenByExe(pid int) map[string]int {
	children := make(map[string]int)
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, ppid, ok := stat(child); ok && ppid == pid {
			if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", child)); err == nil {
				children[filepath.Base(exe)] = child
			}
		}
	}
	return children
}
