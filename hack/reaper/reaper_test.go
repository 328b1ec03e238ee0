package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// reaperBin is the reaper built once by TestMain.
var reaperBin string

// TestMain builds the reaper, or, with REAPER_TEST_SPAWN set, is one of
// the commands the tests run under it (spawn).
func TestMain(m *testing.M) {
	if mode := os.Getenv(spawnEnv); mode != "" {
		os.Exit(spawn(mode))
	}
	dir, err := os.MkdirTemp("", "reaper-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	reaperBin = filepath.Join(dir, "reaper")
	build := exec.Command("go", "build", "-o", reaperBin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build the reaper: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// reaper is the reaper with -grace 1s running argv, its environment
// extended with env.
func reaper(env []string, argv ...string) *exec.Cmd {
	cmd := exec.Command(reaperBin, append([]string{"-grace", "1s", "--"}, argv...)...)
	cmd.Env = append(os.Environ(), env...)
	// What outlived the command holds its output open; should the
	// reaper leave it, Wait returns anyway.
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// exitCodeOf is how cmd ended, as a shell reports it.
func exitCodeOf(t *testing.T, cmd *exec.Cmd, err error) int {
	t.Helper()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("run the reaper: %v", err)
		}
	}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		t.Fatalf("the reaper was killed by %v", ws.Signal())
	}
	return ws.ExitStatus()
}

// TestReaperPassesTheExitCode runs commands that leave nothing behind:
// the reaper exits as they do.
func TestReaperPassesTheExitCode(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		want         int
	}{
		{"success", "exit 0", 0},
		{"failure", "exit 7", 7},
		{"killed", "kill -KILL $$", 128 + 9},
		{"a child waited for", "sleep 0.1 & wait; exit 5", 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			cmd := reaper(nil, "sh", "-c", tc.script)
			cmd.Stderr = &stderr
			if got := exitCodeOf(t, cmd, cmd.Run()); got != tc.want {
				t.Errorf("the reaper exited %d, want %d; stderr:\n%s", got, tc.want, &stderr)
			}
			if stderr.Len() > 0 {
				t.Errorf("the reaper wrote to stderr:\n%s", &stderr)
			}
		})
	}
}

// TestReaperForwardsSignals signals the reaper once its command runs:
// the command receives the signal, and the reaper exits with what the
// command made of it.
func TestReaperForwardsSignals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sig    syscall.Signal
		script string
		want   int
	}{
		{"SIGTERM trapped", syscall.SIGTERM, `trap "exit 42" TERM; echo ready; while :; do sleep 0.1; done`, 42},
		{"SIGINT trapped", syscall.SIGINT, `trap "exit 43" INT; echo ready; while :; do sleep 0.1; done`, 43},
		{"SIGTERM", syscall.SIGTERM, "echo ready; exec sleep 300", 128 + 15},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := reaper(nil, "sh", "-c", tc.script)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			// The reaper and its command in a group of their own, both
			// killed should the test fail.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
			if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
				t.Fatalf("the command said %q, not ready", line)
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			if got := exitCodeOf(t, cmd, waitAtMost(t, cmd, 10*time.Second)); got != tc.want {
				t.Errorf("the reaper exited %d, want %d; stderr:\n%s", got, tc.want, &stderr)
			}
		})
	}
}

// waitAtMost waits for cmd, failing the test if it takes longer than d.
func waitAtMost(t *testing.T, cmd *exec.Cmd, d time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("the reaper did not exit within %v", d)
		return nil
	}
}

// TestParseStat parses the stat lines of processes whose command names
// hold what the fields are split on.
func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		line string
		want proc
	}{
		{"12 (sleep) S 1 12 12 0 -1", proc{pid: 12, ppid: 1, pgid: 12, comm: "sleep", state: 'S'}},
		{"345 (a b) c)) Z 12 7 7 0", proc{pid: 345, ppid: 12, pgid: 7, comm: "a b) c)", state: 'Z'}},
	} {
		got, err := parseStat([]byte(tc.line))
		if err != nil || got != tc.want {
			t.Errorf("parseStat(%q) = %+v, %v; want %+v", tc.line, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "12 sleep S 1 12", "12 (sleep) S 1", "x (sleep) S 1 12"} {
		if p, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q) = %+v, want an error", bad, p)
		}
	}
}

// alive reports whether pid is a process, a zombie included.
func alive(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}

// pids are the lines of out that are numbers.
func pids(out string) []int {
	var found []int
	for _, line := range strings.Fields(out) {
		if pid, err := strconv.Atoi(line); err == nil {
			found = append(found, pid)
		}
	}
	return found
}
