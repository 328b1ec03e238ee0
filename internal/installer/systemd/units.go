package systemd

import (
	"context"
	"errors"
	"fmt"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
)

// ErrUnitFailed: a unit's start job did not end in "done".
var ErrUnitFailed = errors.New("unit did not start")

// Units manages units over D-Bus, connecting as Restarter does.
type Units struct {
	// HostRoot is where the node's / is mounted ("/" on the node).
	HostRoot string
}

func (s *Units) with(ctx context.Context, fn func(*sddbus.Conn) error) error {
	conn, err := connect(ctx, s.HostRoot)
	if err != nil {
		return err
	}
	defer conn.Close()
	return fn(conn)
}

// Reload runs daemon-reload.
func (s *Units) Reload(ctx context.Context) error {
	return s.with(ctx, func(c *sddbus.Conn) error {
		if err := c.ReloadContext(ctx); err != nil {
			return fmt.Errorf("daemon-reload: %w", err)
		}
		return nil
	})
}

// Restart restarts the unit (starting it when it is stopped).
func (s *Units) Restart(ctx context.Context, unit string) error {
	return s.with(ctx, func(c *sddbus.Conn) error {
		_ = c.ResetFailedUnitContext(ctx, unit)
		return waitJob(ctx, unit, "restart", func(done chan<- string) (int, error) {
			return c.RestartUnitContext(ctx, unit, "replace", done)
		})
	})
}

// Stop stops the unit.
func (s *Units) Stop(ctx context.Context, unit string) error {
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
