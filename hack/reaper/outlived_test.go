package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReaperEndsWhatOutlived runs commands that leave processes behind:
// the reaper names each, ends them and exits 3.
func TestReaperEndsWhatOutlived(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		spawn    string   // the test binary's spawn mode, or
		script   string   // a shell script run with sh -c
		cmdlines []string // in the lines naming what outlived it
		minTime  time.Duration
	}{
		{name: "a new session", script: "setsid sleep 300 & echo $!", cmdlines: []string{"sleep 300"}},
		{name: "a process group of its own", spawn: "pgroup", cmdlines: []string{"sleep 301"}},
		{name: "the reaper's process group", script: "sleep 302 & echo $!", cmdlines: []string{"sleep 302"}},
		{name: "a tree", spawn: "tree", cmdlines: []string{"sh -c sleep 303 & echo $!; wait"}},
		// Killed once -grace (1 s) has passed.
		{name: "deaf to SIGTERM", spawn: "deaf", cmdlines: []string{"sleep 304"}, minTime: time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			argv, env := []string{"sh", "-c", tc.script}, []string(nil)
			if tc.spawn != "" {
				argv, env = []string{self}, []string{spawnEnv + "=" + tc.spawn}
			}
			var stdout, stderr bytes.Buffer
			cmd := reaper(env, argv...)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			begin := time.Now()
			code := exitCodeOf(t, cmd, cmd.Run())
			took := time.Since(begin)
			left := pids(stdout.String())
			t.Cleanup(func() { killAll(left) })
			checkOutlived(t, code, stderr.String(), left, tc.cmdlines)
			if took < tc.minTime {
				t.Errorf("the reaper took %v, want at least %v (-grace before SIGKILL)", took, tc.minTime)
			}
		})
	}
}

// checkOutlived checks that the reaper exited 3, named every process
// the command said it left, and the command lines, and that none of those
// processes is left.
func checkOutlived(t *testing.T, code int, stderr string, left []int, cmdlines []string) {
	t.Helper()
	if len(left) == 0 {
		t.Fatalf("the command named no process it left")
	}
	if code != exitOutlived {
		t.Errorf("the reaper exited %d, want %d", code, exitOutlived)
	}
	for _, pid := range left {
		if !strings.Contains(stderr, fmt.Sprintf("reaper: pid %d outlived ", pid)) {
			t.Errorf("the reaper did not name pid %d", pid)
		}
		if alive(pid) {
			t.Errorf("pid %d outlived the reaper", pid)
		}
	}
	// (A line may name a process yet to exec: "setsid sleep 300".)
	for _, c := range cmdlines {
		if !strings.Contains(stderr, c) {
			t.Errorf("the reaper did not name %q", c)
		}
	}
	if want := fmt.Sprintf("reaper: %d processes outlived ", len(left)); !strings.Contains(stderr, want) {
		t.Errorf("the reaper did not say %q", want)
	}
	if t.Failed() {
		t.Logf("stderr:\n%s", stderr)
	}
}

// killAll kills what a failed reaper may have left.
func killAll(pids []int) {
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// TestReaperReapsOrphans runs a command whose child leaves an orphan: the
// orphan is the reaper's child, reaped once it exits while the command
// still runs.
func TestReaperReapsOrphans(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := reaper([]string{spawnEnv + "=orphan"}, self)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if code := exitCodeOf(t, cmd, cmd.Run()); code != 0 || stdout.String() != "reaped\n" {
		t.Errorf("the reaper exited %d, said %q; stderr:\n%s", code, &stdout, &stderr)
	}
}

// spawnEnv names what the test binary, run as a command under the
// reaper, does (spawn).
const spawnEnv = "REAPER_TEST_SPAWN"

// spawnSpec is a process the test binary leaves behind: started and,
// where it says something first, waited for to say it.
type spawnSpec struct {
	argv []string
	attr *syscall.SysProcAttr
	says bool
}

// spawnOf is the process a spawn mode leaves behind.
func spawnOf(mode string) (spawnSpec, bool) {
	switch mode {
	case "pgroup": // sleep in a process group of its own
		return spawnSpec{[]string{"sleep", "301"}, &syscall.SysProcAttr{Setpgid: true}, false}, true
	case "tree": // sh in a session of its own, its sleep below it
		return spawnSpec{[]string{"sh", "-c", "sleep 303 & echo $!; wait"}, &syscall.SysProcAttr{Setsid: true}, true}, true
	case "deaf": // sleep ignoring SIGTERM (an ignored signal stays so across exec)
		return spawnSpec{[]string{"sh", "-c", `trap "" TERM; echo ready; exec sleep 304`}, &syscall.SysProcAttr{Setsid: true}, true}, true
	}
	return spawnSpec{}, false
}

// spawn is the test binary run as a command under the reaper. It exits
// leaving the process mode names (spawnOf), its pid on standard output;
// or, with mode "orphan", it checks that the reaper adopts and reaps an
// orphan.
func spawn(mode string) int {
	if mode == "orphan" {
		return checkOrphanReaped()
	}
	s, ok := spawnOf(mode)
	if !ok {
		fmt.Fprintf(os.Stderr, "no spawn %q\n", mode)
		return 1
	}
	cmd := exec.Command(s.argv[0], s.argv[1:]...)
	cmd.SysProcAttr = s.attr
	out, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(cmd.Process.Pid)
	if s.says {
		line, _ := bufio.NewReader(out).ReadString('\n')
		fmt.Print(line)
	}
	return 0
}

// checkOrphanReaped starts sh, which leaves a sleep behind. The orphaned
// sleep's parent must become the reaper (this process's parent), and once
// it exits the reaper must reap it: it must not stay a zombie.
func checkOrphanReaped() int {
	out, err := exec.Command("sh", "-c", "sleep 1 >/dev/null 2>&1 & echo $!").Output()
	var pid int
	if err == nil {
		_, err = fmt.Sscan(string(out), &pid)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "start the orphan: %v\n", err)
		return 1
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		fmt.Fprintf(os.Stderr, "the orphan: %v\n", err)
		return 1
	}
	if p, err := parseStat(data); err != nil || p.ppid != os.Getppid() {
		fmt.Fprintf(os.Stderr, "the orphan's parent is not the reaper %d: %+v %v\n", os.Getppid(), p, err)
		return 1
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if !alive(pid) {
			fmt.Println("reaped")
			return 0
		}
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Fprintf(os.Stderr, "the orphan %d was not reaped\n", pid)
	return 1
}
