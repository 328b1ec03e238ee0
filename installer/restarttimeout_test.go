package installer_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
)

// TestRestartJobTimesOut: a restart job that never ends (CRI-O's
// crio.service has TimeoutStartSec=0, and a CRI-O hanging in its start
// keeps the job running) is a failed restart once the plan's restart
// timeout has passed: rolled back with one more restart, not a wait until
// the caller's deadline. TestCRIOSystemdNodeRollsBack shows it on a real
// crio.service.
func TestRestartJobTimesOut(t *testing.T) {
	n := newCRIORoot(t)
	etc := filepath.Join(n.root, "etc/crio")
	before := testutil.Tree(t, etc)
	var restarts atomic.Int32
	inst := n.installer()
	inst.Restarter = installer.RestartFunc(func(ctx context.Context) error {
		if restarts.Add(1) == 1 {
			<-ctx.Done() // the job never ends
			return errors.Join(installer.ErrRestartFailed, ctx.Err())
		}
		return nil
	})
	srv := testutil.StartFileServer(t)
	p := ociRuntimePlan(t, srv, "hung-shimkit", []byte("#!/bin/sh\nexec sleep 3600\n"), 0o755)
	p.Restart.Timeout = plan.Duration(time.Second)
	p = rehash(p)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	_, err := inst.Install(ctx, p)
	took := time.Since(start)
	if !errors.Is(err, installer.ErrRolledBack) || installer.ReasonOf(err) != plan.ReasonRestartFailed {
		t.Fatalf("install: %v (reason %s), want rolled back after a failed restart", err, installer.ReasonOf(err))
	}
	if took > 30*time.Second || restarts.Load() != 2 {
		t.Errorf("ended after %v with %d restarts, want about the 1 s restart timeout and 2 restarts", took, restarts.Load())
	}
	assertSameTree(t, "the rollback", before, testutil.Tree(t, etc))
}
