package main

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// waitFor reaps every child that exits until the command, pid, does, and
// returns the command's exit code. Orphans reparented to the reaper are
// among those children: reaped here, they do not stay zombies.
func waitFor(pid int) int {
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, 0, nil)
		switch {
		case errors.Is(err, unix.EINTR):
		case err != nil:
			warnf("wait for pid %d: %v", pid, err)
			return 1
		case got == pid:
			return exitCode(ws)
		}
	}
}

// exitCode is a wait status as a shell reports it: the exit code, or 128
// plus the signal that killed the process.
func exitCode(ws unix.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// reapExited reaps every child that has exited, without waiting for
// those that have not.
func reapExited() {
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || got <= 0 {
			return
		}
	}
}

// killWait is how long the processes SIGKILLed have to go.
const killWait = 5 * time.Second

// endOutlived ends what outlived the command, name: every living process
// still below the reaper. It names each on standard error, sends them
// SIGTERM, waits up to grace, SIGKILLs the rest and reaps them. It
// returns how many outlived the command.
func endOutlived(name string, grace time.Duration) int {
	reapExited()
	left := living(below())
	for _, p := range left {
		warnf("pid %d outlived %s: %s", p.pid, name, cmdline(p))
	}
	if len(left) == 0 {
		return 0
	}
	signalAll(left, unix.SIGTERM)
	if rest := waitGone(grace); len(rest) > 0 {
		signalAll(rest, unix.SIGKILL)
		if rest = waitGone(killWait); len(rest) > 0 {
			warnf("%d processes still there %v after SIGKILL", len(rest), killWait)
		}
	}
	return len(left)
}

// below returns the processes below the reaper, zombies included.
func below() []proc {
	procs, err := readProcs()
	if err != nil {
		warnf("%v", err)
	}
	return descendants(procs, unix.Getpid())
}

// signalAll sends sig to each process and to its process group, but for
// the reaper's own group: that holds the reaper and what started it.
func signalAll(procs []proc, sig unix.Signal) {
	own := unix.Getpgrp()
	for _, p := range procs {
		_ = unix.Kill(p.pid, sig)
		if p.pgid > 1 && p.pgid != own {
			_ = unix.Kill(-p.pgid, sig)
		}
	}
}

// waitGone reaps the processes below the reaper as they exit, until none
// is left or wait has passed; it returns those left.
func waitGone(wait time.Duration) []proc {
	deadline := time.Now().Add(wait)
	for {
		reapExited()
		rest := below()
		if len(rest) == 0 || time.Now().After(deadline) {
			return rest
		}
		time.Sleep(20 * time.Millisecond)
	}
}
