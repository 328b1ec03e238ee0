package main

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// proc is one process as /proc/PID/stat describes it.
type proc struct {
	pid, ppid, pgid int
	comm            string
	state           byte
}

// readProcs reads every process of /proc. A process that exits while it
// is read is left out.
func readProcs() ([]proc, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var procs []proc
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone
		}
		p, err := parseStat(data)
		if err != nil {
			return nil, fmt.Errorf("/proc/%s/stat: %w", e.Name(), err)
		}
		procs = append(procs, p)
	}
	return procs, nil
}

// parseStat parses "pid (comm) state ppid pgrp ...". The command name may
// hold spaces and parentheses, so the fields after it are found from the
// last ')'.
func parseStat(data []byte) (proc, error) {
	open, end := bytes.IndexByte(data, '('), bytes.LastIndexByte(data, ')')
	if open < 0 || end < open {
		return proc{}, fmt.Errorf("no command name in %q", data)
	}
	fields := strings.Fields(string(data[end+1:]))
	if len(fields) < 3 || len(fields[0]) != 1 {
		return proc{}, fmt.Errorf("too few fields in %q", data)
	}
	p := proc{comm: string(data[open+1 : end]), state: fields[0][0]}
	var errs [3]error
	p.pid, errs[0] = strconv.Atoi(strings.TrimSpace(string(data[:open])))
	p.ppid, errs[1] = strconv.Atoi(fields[1])
	p.pgid, errs[2] = strconv.Atoi(fields[2])
	for _, err := range errs {
		if err != nil {
			return proc{}, fmt.Errorf("parse %q: %w", data, err)
		}
	}
	return p, nil
}

// descendants returns the processes below root, each parent before its
// children.
func descendants(procs []proc, root int) []proc {
	children := make(map[int][]proc)
	for _, p := range procs {
		children[p.ppid] = append(children[p.ppid], p)
	}
	var below []proc
	for queue := slices.Clone(children[root]); len(queue) > 0; queue = queue[1:] {
		below = append(below, queue[0])
		queue = append(queue, children[queue[0].pid]...)
	}
	return below
}

// living leaves out the zombies: they have exited, and go once their
// parent reaps them.
func living(procs []proc) []proc {
	var alive []proc
	for _, p := range procs {
		if p.state != 'Z' {
			alive = append(alive, p)
		}
	}
	return alive
}

// cmdline is a process's command line with its NULs as spaces, or its
// command name in brackets when it has none. A process in the middle of
// an execve has none for a moment: it is asked again a few times.
func cmdline(p proc) string {
	for range 5 {
		data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.pid))
		if s := strings.TrimSpace(strings.ReplaceAll(string(data), "\x00", " ")); s != "" {
			return s
		}
		time.Sleep(10 * time.Millisecond)
	}
	return "[" + p.comm + "]"
}
