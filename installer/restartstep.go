package installer

import (
	"context"
	"time"
)

// restartRuntime restarts the node's runtime when its config changed (or
// an interrupted operation was recovered), then checks over CRI that it
// came back with every handler of the plan (install) or without the
// removed ones (uninstall): CRI-O drops a handler it cannot use and
// starts without it, so coming back proves nothing by itself. Its undo is
// the restart after the rollback, which the runner does once every step
// is undone.
type restartRuntime struct {
	// present are the handlers that must be there; absent those that must
	// be gone.
	present, absent []string
	// runs share the restart (InstallAll): one restart when any of them
	// changed the config, and every one of them sees it. Empty: the run
	// the step is bound to.
	runs []*run
}

func (*restartRuntime) name() string { return "restarted" }

func (s *restartRuntime) do(ctx context.Context, r *run) error {
	runs := s.runs
	if len(runs) == 0 {
		runs = []*run{r}
	}
	need := false
	for _, x := range runs {
		need = need || x.configChanged() || x.recovered
	}
	if !need || !r.rt.restarts {
		return nil
	}
	start := time.Now()
	defer func() {
		for _, x := range runs {
			x.restartDur, x.backAt = time.Since(start), time.Now()
		}
	}()
	// The restart job ends within the plan's restart timeout, or it
	// failed: CRI-O's crio.service has TimeoutStartSec=0, so a CRI-O that
	// hangs in its start (a runtime_path that never answers --version)
	// keeps the job running for ever.
	rctx, cancel := context.WithTimeout(ctx, r.plan.Restart.HealthTimeout())
	err := r.rt.Restart(rctx)
	cancel()
	if err != nil {
		return err
	}
	for _, x := range runs {
		x.restarted = true
	}
	r.i.step("restarted-" + orDefault(r.rt.kind, "runtime"))
	if len(s.present)+len(s.absent) == 0 {
		return r.rt.Check(ctx, "", true)
	}
	for _, name := range s.present {
		if err := r.rt.Check(ctx, name, true); err != nil {
			return err
		}
	}
	for _, name := range s.absent {
		if err := r.rt.Check(ctx, name, false); err != nil {
			return err
		}
	}
	return nil
}

func (*restartRuntime) undo(context.Context, *run) error { return nil }
