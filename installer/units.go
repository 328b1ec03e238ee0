package installer

import (
	"context"
	"errors"
	"fmt"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
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
var ErrUnitFailed = errors.New("unit did not start")

// SystemdUnits manages units over D-Bus, connecting as SystemdRestarter
// does.
type SystemdUnits struct {
	// HostRoot is where the node's / is mounted ("/" on the node).
	HostRoot string
}

func (s *SystemdUnits) with(ctx context.Context, fn func(*sddbus.Conn) error) error {
	conn, err := (&SystemdRestarter{HostRoot: s.HostRoot}).connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return fn(conn)
}

// Reload runs daemon-reload.
func (s *SystemdUnits) Reload(ctx context.Context) error {
	return s.with(ctx, func(c *sddbus.Conn) error {
		if err := c.ReloadContext(ctx); err != nil {
			return fmt.Errorf("daemon-reload: %w", err)
		}
		return nil
	})
}

// Restart restarts the unit (starting it when it is stopped).
func (s *SystemdUnits) Restart(ctx context.Context, unit string) error {
	return s.with(ctx, func(c *sddbus.Conn) error {
		_ = c.ResetFailedUnitContext(ctx, unit)
		return waitJob(ctx, unit, "restart", func(done chan<- string) (int, error) {
			return c.RestartUnitContext(ctx, unit, "replace", done)
		})
	})
}

// Stop stops the unit.
func (s *SystemdUnits) Stop(ctx context.Context, unit string) error {
	return s.with(ctx, func(c *sddbus.Conn) error {
		p, err := c.GetUnitPropertyContext(ctx, unit, "LoadState")
		if err != nil || p.Value.Value() != "loaded" {
			return nil // unknown to systemd: nothing runs
		}
		return waitJob(ctx, unit, "stop", func(done chan<- string) (int, error) {
			return c.StopUnitContext(ctx, unit, "replace", done)
		})
	})
}

func waitJob(ctx context.Context, unit, verb string, start func(chan<- string) (int, error)) error {
	done := make(chan string, 1)
	if _, err := start(done); err != nil {
		return fmt.Errorf("%w: %s %s: %w", ErrUnitFailed, verb, unit, err)
	}
	select {
	case result := <-done:
		if result != "done" {
			return fmt.Errorf("%w: %s job of %s ended %q", ErrUnitFailed, verb, unit, result)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: waiting to %s %s: %w", ErrUnitFailed, verb, unit, ctx.Err())
	}
}
