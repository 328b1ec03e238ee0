package installer

import (
	"context"
	"errors"
	"fmt"
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
	i      *Installer
	plan   *plan.NodePlan
	state  *State
	target containerdconfig.Target
	// recovered: an interrupted operation was undone, so containerd must be
	// restarted even when this one changes nothing.
	recovered bool
	prev      ShimState // the Shim's record before the operation
	had       bool
	rec       ShimState // the record the operation leaves
	pending   *Pending
	hs        []containerdconfig.RuntimeHandler // the plan's handlers, resolved

	// Set by the steps.
	staging    string                     // local path of the staging directory
	stagedVer  string                     // version prepared in staging ("" when the current one is kept)
	changes    []*containerdconfig.Change // config edits, in order
	restarted  bool                       // containerd was restarted with the new config
	changed    bool                       // a step changed the node
	newLinks   map[string]string          // PATH links to create (preflight)
	ownLinks   []string                   // PATH links the Shim made before and keeps
	restartDur time.Duration
	canaryDur  time.Duration // the canary passed in this time
}

func (r *run) configChanged() bool {
	for _, c := range r.changes {
		if c.Changed() {
			return true
		}
	}
	return false
}

// savePending writes the pending record before a step touches the node.
func (r *run) savePending() error {
	r.state.Pending = r.pending
	return r.i.writeState(r.state)
}

// execute runs the steps in order; when one fails, it undoes it and every
// step before it, in reverse, then brings containerd back to the restored
// config.
func (i *Installer) execute(ctx context.Context, r *run, steps []step) error {
	var done []step
	for _, s := range steps {
		err := s.do(ctx, r)
		done = append(done, s)
		if err != nil {
			if ctx.Err() != nil {
				// Whatever the step saw (a closed connection, a cancelled
				// call), it stopped because the operation was cancelled.
				err = fmt.Errorf("%w (%w): %w", ErrInterrupted, context.Cause(ctx), err)
			}
			return i.rollback(ctx, r, done, &stepError{step: s.name(), err: err})
		}
		i.step(s.name())
	}
	return nil
}

// rollback undoes done (the last one failed) and restarts containerd when
// it may have seen the changes.
func (i *Installer) rollback(ctx context.Context, r *run, done []step, cause error) error {
	if !r.changed && !r.recovered {
		// Nothing on the node changed: undo only drops staging.
		for k := len(done) - 1; k >= 0; k-- {
			_ = done[k].undo(ctx, r)
		}
		if r.state.Pending != nil {
			r.state.Pending = nil
			if err := i.writeState(r.state); err != nil {
				return fmt.Errorf("%w (and clearing the pending state: %w)", cause, err)
			}
		}
		return cause
	}
	// The caller's context may be what ran out (SIGTERM, a deadline); the
	// rollback gets its own, within the plan's grace period.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.plan.Restart.RollbackTimeout())
	defer cancel()
	var errs []error
	for k := len(done) - 1; k >= 0; k-- {
		if err := done[k].undo(ctx, r); err != nil {
			errs = append(errs, fmt.Errorf("undo %s: %w", done[k].name(), err))
		}
	}
	if (r.restarted || r.recovered || r.restartDur > 0) && i.restarts(r.target) {
		errs = append(errs, i.restartHealthy(ctx, r.target, r.plan.Restart))
	}
	if err := errors.Join(errs...); err != nil {
		i.log().Error("rollback failed", "cause", cause, "rollback", err)
		return fmt.Errorf("%w: %w; rollback: %w", ErrRollbackFailed, cause, err)
	}
	r.state.Pending = nil
	if err := i.writeState(r.state); err != nil {
		return fmt.Errorf("%w: %w; recording the rollback: %w", ErrRollbackFailed, cause, err)
	}
	i.log().Warn("rolled back", "cause", cause)
	return fmt.Errorf("%w: %w", ErrRolledBack, cause)
}

// restartHealthy restarts containerd after clearing a failed unit and waits
// until it is ready (whatever handlers it has).
func (i *Installer) restartHealthy(ctx context.Context, t containerdconfig.Target, rs plan.Restart) error {
	rst := i.restarter(t)
	if err := rst.ResetFailed(ctx); err != nil {
		return err
	}
	if err := rst.Restart(ctx); err != nil {
		return err
	}
	return i.health(t, time.Duration(rs.Timeout)).Check(ctx, "", true)
}
