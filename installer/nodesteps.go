package installer

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/shimkit/shimkit/internal/installer/runtime"
	"github.com/shimkit/shimkit/internal/installer/units"
)

// startSandboxers writes a systemd unit per sandboxer daemon, enables it
// (a multi-user.target.wants link, as systemctl enable makes) and
// (re)starts the units that are new or changed, before containerd is
// restarted to connect to them.
type startSandboxers struct{ written []string }

func (*startSandboxers) name() string { return "units" }

func (s *startSandboxers) do(ctx context.Context, r *run) error {
	u := r.i.units()
	var todo []units.File
	r.rec.Units, r.rec.Written, todo = u.Plan(r.plan.Shim, r.plan.Sandboxers, r.i.paths().CurrentDir(r.plan.Shim.Name), r.rt.Containerd.Preset.Units)
	if len(todo) == 0 {
		return nil
	}
	r.pending.Written = map[string]string{}
	for _, f := range todo {
		r.pending.Units = append(r.pending.Units, f.Path)
		r.pending.Written[f.Path] = r.rec.Written[f.Path]
	}
	if err := r.savePending(); err != nil {
		return err
	}
	written, err := u.Write(todo)
	s.written, r.changed = written, r.changed || len(written) > 0
	if err != nil {
		return err
	}
	return u.Start(ctx, todo, r.plan.Sandboxers, time.Duration(r.plan.Restart.Timeout))
}

func (s *startSandboxers) undo(ctx context.Context, r *run) error {
	if len(s.written) == 0 {
		return nil
	}
	return r.i.units().Restore(ctx, s.written, r.pending.Written)
}

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
	noUndo
}

func (*restartRuntime) name() string { return "restarted" }

func (s *restartRuntime) do(ctx context.Context, r *run) error {
	runs := s.runs
	if len(runs) == 0 {
		runs = []*run{r}
	}
	if need := slices.ContainsFunc(runs, func(x *run) bool { return x.configChanged() || x.recovered }); !need || !r.rt.Restarts {
		return nil
	}
	if err := r.rt.CheckShims(ctx); err != nil { // a stuck shim would lose its pod: no restart
		return err
	}
	start := time.Now()
	defer func() {
		for _, x := range runs {
			x.restart.dur, x.restart.backAt = time.Since(start), time.Now()
		}
	}()
	// The restart job ends within the plan's restart timeout, or it failed.
	if err := r.rt.RestartWithin(ctx, r.plan.Restart.HealthTimeout()); err != nil {
		return err
	}
	unit := ""
	if r.rt.Unit != nil {
		unit, _, _, _ = r.rt.Unit.UnitState(ctx) // which unit was restarted, for the result
	}
	for _, x := range runs {
		x.restart.done, x.restart.unit = true, unit
	}
	r.i.step("restarted-"+cmp.Or(r.rt.Kind, "runtime"), "unit", unit)
	return r.rt.Await(ctx, s.present, s.absent)
}

// runCanary is the install step after the restart: when the node's
// containerd has the change (a restart, or a new bundle behind an
// unchanged config), the plan's canary must pass before the install
// commits; a failure rolls everything back.
type runCanary struct{ noUndo }

func (runCanary) name() string { return "canaried" }

func (runCanary) do(ctx context.Context, r *run) error {
	c := r.plan.Canary
	if c == nil || !r.rt.Restarts || !r.restart.done && !r.changed {
		return nil
	}
	if r.i.Canary == nil {
		return fmt.Errorf("%w: %w", ErrCanaryFailed, ErrNoCanaryRunner)
	}
	if r.restart.done {
		if err := runtime.Settle(ctx, r.restart.backAt, r.i.CanarySettle); err != nil {
			return err
		}
	}
	start := time.Now()
	if err := r.i.Canary.RunCanary(ctx, *c); err != nil {
		return err
	}
	r.restart.canary = time.Since(start)
	r.i.step("canary-passed", "handler", c.Handler, "duration", r.restart.canary)
	return nil
}

// unconfigure removes the Shim's handlers and proxy plugins from the
// runtime's config.
type unconfigure struct{}

func (unconfigure) name() string { return "configured" }

func (unconfigure) do(ctx context.Context, r *run) error {
	e := r.configEdit()
	e.Remove, e.RemoveProxyPlugins = r.prev.handlers(), r.prev.ProxyPlugins
	return r.applyConfig(ctx, e)
}

func (unconfigure) undo(_ context.Context, r *run) error { return r.rollbackConfig() }

// configEdit starts the run's edit: its owner, where the staged bundle
// is, and the journal.
func (r *run) configEdit() ConfigEdit {
	current := r.i.paths().CurrentDir(r.plan.Shim.Name)
	return ConfigEdit{
		Owner:  r.plan.Shim.Name,
		Locate: func(nodePath string) string { return r.bundle.Locate(r.i.paths(), current, nodePath) },
		Journal: func(files, handlers []string) error {
			r.pending.ConfigFiles, r.pending.Handlers = files, handlers
			r.pending.Runtime = r.rt.Recorded()
			return r.savePending()
		},
	}
}

// applyConfig has the runtime apply the edit (which journals it first).
func (r *run) applyConfig(ctx context.Context, e ConfigEdit) error {
	c, err := r.rt.Configure(ctx, e)
	if err != nil {
		return err
	}
	r.config = append(r.config, c)
	r.changed = r.changed || c.Changed()
	return nil
}

// rollbackConfig restores every edited file, newest edit first.
func (r *run) rollbackConfig() error {
	err := r.config.Rollback()
	r.config = nil
	return err
}

// commitConfig drops the backups, records the directories the edits
// created (a drop-in directory) in the node's state, and removes those
// recorded that are empty now (the last drop-in went).
func (r *run) commitConfig() error {
	err := r.config.Commit()
	r.state.CreatedDirs = runtime.KeepCreatedDirs(r.i.paths().Root(), r.state.CreatedDirs, r.config.CreatedDirs(), r.i.log())
	return err
}
