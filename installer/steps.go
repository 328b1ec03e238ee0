package installer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/installer/bundle"
	"github.com/shimkit/shimkit/internal/installer/runtime"
)

// A step is one stage of an operation, with its own undo. An operation is
// a list of steps; a new capability is a new step.
//
// do changes the node (or prepares to); undo reverts what do did, and must
// cope with a do that failed half-way. Steps record their intent in the
// pending state before touching the node, so that recoverPending can undo
// them after a crash too.
type step interface {
	name() string
	do(ctx context.Context, r *run) error
	undo(ctx context.Context, r *run) error
}

// noUndo is what a step that changes nothing itself, or whose undo the
// runner does, has to undo: nothing.
type noUndo struct{}

func (noUndo) undo(context.Context, *run) error { return nil }

// run is the shared state of one operation: what every step reads, and
// each step's own state grouped by the concern that uses it.
type run struct {
	i     *Installer
	plan  *plan.NodePlan
	state *State
	rt    *runtime.Node
	// recovered: an interrupted operation was undone, so the runtime must
	// be restarted even when this one changes nothing.
	recovered bool
	prev      ShimState // the Shim's record before the operation
	had       bool
	rec       ShimState // the record the operation leaves
	pending   *Pending
	hs        []containerdconfig.RuntimeHandler // the plan's handlers, resolved

	drift   driftState      // the node compared with prev (checkDrift, stageBundle)
	bundle  bundle.Staging  // the bundle laid out in staging (stageBundle, placeBundle)
	config  runtime.Changes // config edits, in order (configure, unconfigure, commits)
	links   bundle.Links    // PATH links to create and to keep (preflight, linkShims)
	restart restartState    // the runtime's restart (restartRuntime, runCanary)

	changed   bool // a step changed the node
	committed bool // the run's changes are final
}

// driftState is how the Shim's bundle differs from its record, once
// checked; found is what an install of the same spec found drifted (and
// repairs).
type driftState struct {
	bundle  []string
	checked bool
	found   []string
}

// restartState is what the restart and the canary did: the runtime was
// restarted with the new config, in dur, and answered again at backAt;
// the canary passed in canary; unit is the unit restarted, when the
// restarter tells it.
type restartState struct {
	done   bool
	dur    time.Duration
	backAt time.Time
	canary time.Duration
	unit   string
}

func (r *run) configChanged() bool { return r.config.Changed() }

// savePending writes the pending record before a step touches the node.
func (r *run) savePending() error {
	r.state.Pending = r.state.Pending.With(r.pending)
	return r.i.store().write(r.state)
}

// clearPending drops the run's pending record (written with the state).
func (r *run) clearPending() { r.state.Pending = r.state.Pending.Without(r.pending) }

// executor is the step executor role: it runs an operation's steps and,
// when one fails, rolls back.
type executor struct{ i *Installer }

// bound is a step and the run (the Shim) it changes.
type bound struct {
	r *run
	s step
}

// executeAll runs the steps of an operation of several runs (one per
// Shim, sharing the node's state) in order; when one fails, every step
// done is undone, in reverse, and the runtime is restarted once.
func (e executor) executeAll(ctx context.Context, runs []*run, steps []bound) error {
	i := e.i
	var done []bound
	for _, b := range steps {
		err := b.s.do(ctx, b.r)
		done = append(done, b)
		if err != nil {
			if ctx.Err() != nil {
				// Whatever the step saw (a closed connection, a cancelled
				// call), it stopped because the operation was cancelled.
				err = fmt.Errorf("%w (%w): %w", ErrInterrupted, context.Cause(ctx), err)
			}
			_, shared := b.s.(*restartRuntime)
			return e.rollback(ctx, runs, done, &stepError{step: b.s.name(), shim: b.r.plan.Shim.Name, shared: shared && len(runs) > 1, err: err})
		}
		if _, ok := b.s.(commitInstall); ok {
			// A committed run is final: a later failure of another run
			// undoes only that one.
			b.r.committed = true
			done = slices.DeleteFunc(done, func(d bound) bool { return d.r == b.r })
		}
		if len(runs) > 1 {
			i.step(b.s.name(), "shim", b.r.plan.Shim.Name)
		} else {
			i.step(b.s.name())
		}
	}
	return nil
}

// rollback undoes done (the last one failed) and restarts the runtime
// once when it may have seen the changes.
func (e executor) rollback(ctx context.Context, runs []*run, done []bound, cause error) error {
	i := e.i
	changed, restarted := false, false
	for _, r := range runs {
		if r.committed {
			continue
		}
		changed = changed || r.changed || r.recovered
		restarted = restarted || r.restart.done || r.recovered || r.restart.dur > 0
	}
	state, rt := runs[0].state, runs[0].rt
	if !changed {
		// Nothing on the node changed: undo only drops staging.
		for k := len(done) - 1; k >= 0; k-- {
			_ = done[k].s.undo(ctx, done[k].r)
		}
		if state.Pending != nil {
			state.Pending = nil
			if err := i.store().write(state); err != nil {
				return fmt.Errorf("%w (and clearing the pending state: %w)", cause, err)
			}
		}
		return cause
	}
	// The caller's context may be what ran out (SIGTERM, a deadline); the
	// rollback gets its own, within the plan's grace period.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), runs[0].plan.Restart.RollbackTimeout())
	defer cancel()
	var errs []error
	for k := len(done) - 1; k >= 0; k-- {
		if err := done[k].s.undo(ctx, done[k].r); err != nil {
			errs = append(errs, fmt.Errorf("undo %s of %s: %w", done[k].s.name(), done[k].r.plan.Shim.Name, err))
		}
	}
	if restarted && rt.Restarts {
		errs = append(errs, rt.RestartHealthy(ctx))
	}
	if err := errors.Join(errs...); err != nil {
		i.log().Error("rollback failed", "cause", cause, "rollback", err)
		return fmt.Errorf("%w: %w; rollback: %w", ErrRollbackFailed, cause, err)
	}
	state.Pending = nil
	if err := i.store().write(state); err != nil {
		return fmt.Errorf("%w: %w; recording the rollback: %w", ErrRollbackFailed, cause, err)
	}
	i.log().Warn("rolled back", "cause", cause)
	return fmt.Errorf("%w: %w", ErrRolledBack, cause)
}
