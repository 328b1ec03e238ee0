package installer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/installer/plan"
)

// A step is one stage of an operation, with its own undo. An operation is
// a list of steps; a new capability is a new step in its own file.
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

// run is the shared state of one operation.
type run struct {
	i     *Installer
	plan  *plan.NodePlan
	state *State
	rt    *nodeRuntime
	// recovered: an interrupted operation was undone, so the runtime must
	// be restarted even when this one changes nothing.
	recovered bool
	prev      ShimState // the Shim's record before the operation
	had       bool
	rec       ShimState // the record the operation leaves
	pending   *Pending
	hs        []containerdconfig.RuntimeHandler // the plan's handlers, resolved
	// bundleDrift is how the Shim's bundle differs from prev, once
	// bundleChecked; found is what an install of the same spec found
	// drifted (and repairs).
	bundleDrift   []string
	bundleChecked bool
	found         []string

	// Set by the steps.
	staging    string            // local path of the staging directory
	stagedVer  string            // version prepared in staging ("" when the current one is kept)
	changes    changes           // config edits, in order
	restarted  bool              // the runtime was restarted with the new config
	changed    bool              // a step changed the node
	newLinks   map[string]string // PATH links to create (preflight)
	ownLinks   []string          // PATH links the Shim made before and keeps
	restartDur time.Duration
	backAt     time.Time     // the runtime answered again after the restart
	canaryDur  time.Duration // the canary passed in this time
	committed  bool          // the run's changes are final
}

func (r *run) configChanged() bool { return r.changes.Changed() }

// savePending writes the pending record before a step touches the node.
func (r *run) savePending() error {
	r.state.Pending = r.state.Pending.with(r.pending)
	return r.i.store().write(r.state)
}

// clearPending drops the run's pending record (written with the state).
func (r *run) clearPending() { r.state.Pending = r.state.Pending.without(r.pending) }

// executor is the step executor role: it runs an operation's steps and,
// when one fails, rolls back.
type executor struct{ i *Installer }

// execute runs the steps of one run in order; when one fails, it undoes
// it and every step before it, in reverse, then brings the runtime back
// to the restored config.
func (e executor) execute(ctx context.Context, r *run, steps []step) error {
	var bs []bound
	for _, s := range steps {
		bs = append(bs, bound{r, s})
	}
	return e.executeAll(ctx, []*run{r}, bs)
}

// bound is a step of one run of an operation that changes several Shims.
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
		restarted = restarted || r.restarted || r.recovered || r.restartDur > 0
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
	if restarted && rt.restarts {
		errs = append(errs, restartHealthy(ctx, rt))
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

// restartHealthy restarts the runtime after clearing a failed unit and
// waits until it is ready (whatever handlers it has).
func restartHealthy(ctx context.Context, rt Runtime) error {
	if r, ok := rt.(failedResetter); ok {
		if err := r.ResetFailed(ctx); err != nil {
			return err
		}
	}
	if err := rt.Restart(ctx); err != nil {
		return err
	}
	return rt.Check(ctx, "", true)
}
