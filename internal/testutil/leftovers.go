package testutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/shimkit/shimkit/internal/mountinfo"
)

// Teardown removes every pod sandbox through CRI (so shims, mounts and
// cgroups go with them), stops containerd, then checks that no process or
// mount of this containerd is left. Leftovers are cleaned up and reported as
// an error.
func (c *Containerd) Teardown(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var errs []error
	if c.proc.cmd != nil {
		if err := c.removeSandboxes(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if err := c.Stop(ctx); err != nil {
		errs = append(errs, err)
	}
	if procs := ProcessesMentioning(c.Dir); len(procs) > 0 {
		for _, p := range procs {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		errs = append(errs, fmt.Errorf("processes left behind: %v", procs))
	}
	if mounts := MountsUnder(c.Dir); len(mounts) > 0 {
		for _, m := range mounts {
			_ = syscall.Unmount(m, syscall.MNT_DETACH)
		}
		errs = append(errs, fmt.Errorf("mounts left behind: %v", mounts))
	}
	return errors.Join(errs...)
}

func (c *Containerd) removeSandboxes(ctx context.Context) error {
	rt, closeConn, err := c.dial()
	if err != nil {
		return err
	}
	defer closeConn()
	return removeSandboxes(ctx, rt)
}

// ProcessesMentioning returns the pids of processes whose command line
// contains s (for example a containerd's state directory or socket, which its
// shims are started with).
func ProcessesMentioning(s string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(string(cmdline), s) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// MountsUnder returns the mount points at or below dir, deepest first.
func MountsUnder(dir string) []string {
	points, err := mountinfo.Points("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var mounts []string
	for _, mp := range points {
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			mounts = append(mounts, mp)
		}
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i]) > len(mounts[j]) })
	return mounts
}
