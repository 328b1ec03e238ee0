package installer

import (
	"context"

	"github.com/shimkit/shimkit/internal/installer/systemd"
)

// UnitManager runs the systemd units of sandboxer daemons. The installer
// writes the unit files itself; the manager makes systemd read them and
// starts or stops units.
type UnitManager interface {
	// Reload makes systemd read unit files again (daemon-reload).
	Reload(ctx context.Context) error
	// Restart (re)starts a unit and waits until its start job is done.
	Restart(ctx context.Context, unit string) error
	// Stop stops a unit; a unit systemd does not know is already stopped.
	Stop(ctx context.Context, unit string) error
}

var _ UnitManager = (*SystemdUnits)(nil)

// ErrUnitFailed: a unit's start job did not end in "done".
var ErrUnitFailed = systemd.ErrUnitFailed

// SystemdUnits manages units over D-Bus, connecting as SystemdRestarter
// does.
type SystemdUnits = systemd.Units
