package installer

import (
	"context"
	"time"
)

// restartContainerd restarts containerd when its config changed (or an
// interrupted operation was recovered), then checks over CRI that it came
// back with every handler of the plan (install) or without the removed
// ones (uninstall). Its undo is the restart after the rollback, which the
// runner does once every step is undone.
type restartContainerd struct {
	// present are the handlers that must be there; absent those that must
	// be gone.
	present, absent []string
	// runs share the restart (InstallAll): one restart when any of them
	// changed the config, and every one of them sees it. Empty: the run
	// the step is bound to.
	runs []*run
}

func (*restartContainerd) name() string { return "restarted" }

func (s *restartContainerd) do(ctx context.Context, r *run) error {
	i := r.i
	runs := s.runs
	if len(runs) == 0 {
		runs = []*run{r}
	}
	need := false
	for _, x := range runs {
		need = need || x.configChanged() || x.recovered
	}
	if !need || !i.restarts(r.target) {
		return nil
	}
	start := time.Now()
	defer func() {
		for _, x := range runs {
			x.restartDur, x.backAt = time.Since(start), time.Now()
		}
	}()
	if err := i.restarter(r.target).Restart(ctx); err != nil {
		return err
	}
	for _, x := range runs {
		x.restarted = true
	}
	i.step("restarted-containerd")
	h := i.health(r.target, time.Duration(r.plan.Restart.Timeout))
	if len(s.present)+len(s.absent) == 0 {
		return h.Check(ctx, "", true)
	}
	for _, name := range s.present {
		if err := h.Check(ctx, name, true); err != nil {
			return err
		}
	}
	for _, name := range s.absent {
		if err := h.Check(ctx, name, false); err != nil {
			return err
		}
	}
	return nil
}

func (*restartContainerd) undo(context.Context, *run) error { return nil }
