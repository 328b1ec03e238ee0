package plan

import "time"

// DefaultRestartTimeout is how long the runtime may take to come back
// healthy when a plan's Restart.Timeout is zero.
const DefaultRestartTimeout = 30 * time.Second

// undoBudget covers undoing the steps other than the restart: files put
// back, units stopped, links removed.
const undoBudget = 30 * time.Second

// signalMargin is what a pod's grace period keeps beyond the rollback: the
// time from SIGTERM to the operation noticing, and the process exiting.
const signalMargin = 15 * time.Second

// HealthTimeout is how long containerd may take to come back healthy after
// one restart.
func (r Restart) HealthTimeout() time.Duration {
	if r.Timeout <= 0 {
		return DefaultRestartTimeout
	}
	return time.Duration(r.Timeout)
}

// RollbackTimeout bounds a rollback: undoing every step, one more restart
// of containerd and its health wait. The installer gives a rollback this
// long, whatever happened to the operation's own context.
func (r Restart) RollbackTimeout() time.Duration { return undoBudget + r.HealthTimeout() }

// GracePeriod is how long the installer needs between SIGTERM and exiting
// to either finish or roll back: the signal cancels the step in progress
// (a restart's health wait included), then the rollback runs. A pod that
// runs the installer must give it at least this long
// (terminationGracePeriodSeconds), or SIGKILL could cut a rollback short.
func (r Restart) GracePeriod() time.Duration { return r.RollbackTimeout() + signalMargin }
