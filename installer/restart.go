package installer

import (
	"context"

	"github.com/shimkit/shimkit/internal/installer/systemd"
)

// Restarter restarts containerd so that it reads its configuration again.
// containerd exits on SIGHUP rather than reloading, so no Restarter ever
// sends it.
type Restarter interface {
	// Restart restarts containerd and returns once the restart job ended.
	Restart(ctx context.Context) error
	// ResetFailed clears a failed state (systemd's start limit) so that the
	// next Restart runs.
	ResetFailed(ctx context.Context) error
}

// RestartFunc adapts a function to Restarter; ResetFailed does nothing. It
// serves process supervisors and tests.
type RestartFunc func(ctx context.Context) error

// Restart calls f.
func (f RestartFunc) Restart(ctx context.Context) error { return f(ctx) }

// ResetFailed has nothing to reset.
func (f RestartFunc) ResetFailed(context.Context) error { return nil }

var (
	_ Restarter = RestartFunc(nil)
	_ Restarter = (*SystemdRestarter)(nil)
)

// ErrRestartFailed: the restart job did not end in "done".
var ErrRestartFailed = systemd.ErrRestartFailed

// SystemdRestarter restarts a systemd unit over D-Bus, from inside a
// privileged pod or on the node itself, with nothing installed on the host:
// it connects to systemd's private socket under the host root, or to the
// system bus socket when the private one refuses (it does for a process
// outside systemd's PID namespace). Units are the candidate units, in
// order; the one restarted is the one that runs containerd.
type SystemdRestarter = systemd.Restarter

// ErrNoUnit: none of the candidate units runs containerd.
var ErrNoUnit = systemd.ErrNoUnit
