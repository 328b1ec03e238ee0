package installer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/godbus/dbus/v5"
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
var ErrRestartFailed = errors.New("restart failed")

// SystemdRestarter restarts a systemd unit over D-Bus, from inside a
// privileged pod or on the node itself, with nothing installed on the host:
// it connects to systemd's private socket under the host root, or to the
// system bus socket when the private one refuses (it does for a process
// outside systemd's PID namespace).
type SystemdRestarter struct {
	// HostRoot is where the node's / is mounted ("/" on the node).
	HostRoot string
	// Units are the candidate units, in order; the first one that systemd
	// has loaded is restarted (for example k3s, then k3s-agent).
	Units []string
}

// Sockets tried, as node paths.
const (
	systemdPrivateSocket = "/run/systemd/private"
	systemBusSocket      = "/run/dbus/system_bus_socket"
)

func (s *SystemdRestarter) connect(ctx context.Context) (*sddbus.Conn, error) {
	root := s.HostRoot
	if root == "" {
		root = "/"
	}
	var errs []error
	for _, sock := range []struct {
		path  string
		hello bool
	}{{systemdPrivateSocket, false}, {systemBusSocket, true}} {
		p := filepath.Join(root, sock.path)
		if _, err := os.Stat(p); err != nil {
			errs = append(errs, err)
			continue
		}
		conn, err := sddbus.NewConnection(func() (*dbus.Conn, error) {
			c, err := dbus.Dial("unix:path="+p, dbus.WithContext(ctx))
			if err != nil {
				return nil, err
			}
			if err := c.Auth([]dbus.Auth{dbus.AuthExternal(fmt.Sprint(os.Getuid()))}); err != nil {
				c.Close()
				return nil, err
			}
			if sock.hello {
				if err := c.Hello(); err != nil {
					c.Close()
					return nil, err
				}
			}
			return c, nil
		})
		if err == nil {
			// The private socket accepts the connection but may refuse the
			// first call; ask something cheap to find out.
			if _, err = conn.GetManagerProperty("Version"); err == nil {
				return conn, nil
			}
			conn.Close()
		}
		errs = append(errs, fmt.Errorf("%s: %w", p, err))
	}
	return nil, fmt.Errorf("connect to systemd: %w", errors.Join(errs...))
}

// unit returns the first candidate unit systemd has loaded.
func (s *SystemdRestarter) unit(ctx context.Context, conn *sddbus.Conn) (string, error) {
	for _, u := range s.Units {
		name := u
		if filepath.Ext(name) == "" {
			name += ".service"
		}
		p, err := conn.GetUnitPropertyContext(ctx, name, "LoadState")
		if err != nil {
			continue
		}
		if v, ok := p.Value.Value().(string); ok && v == "loaded" {
			return name, nil
		}
	}
	return "", fmt.Errorf("none of the units %v is loaded", s.Units)
}

// onUnit connects to systemd and runs fn on the first loaded candidate
// unit.
func (s *SystemdRestarter) onUnit(ctx context.Context, fn func(conn *sddbus.Conn, unit string) error) error {
	conn, err := s.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	unit, err := s.unit(ctx, conn)
	if err != nil {
		return err
	}
	return fn(conn, unit)
}

// Restart restarts the unit and waits for the job's result. When systemd
// refuses because the unit hit its start limit (StartLimitBurst counts
// manual restarts too, so a few installs in a row reach it), the failed
// state is reset and the restart tried once more.
func (s *SystemdRestarter) Restart(ctx context.Context) error {
	return s.onUnit(ctx, func(conn *sddbus.Conn, unit string) error {
		err := restart(ctx, conn, unit)
		if err == nil || !startLimitHit(ctx, conn, unit) {
			return err
		}
		if rerr := conn.ResetFailedUnitContext(ctx, unit); rerr != nil {
			return fmt.Errorf("%w; reset-failed: %w", err, rerr)
		}
		return restart(ctx, conn, unit)
	})
}

// ResetFailed clears the unit's failed state and start-limit counter, as
// `systemctl reset-failed` does.
func (s *SystemdRestarter) ResetFailed(ctx context.Context) error {
	return s.onUnit(ctx, func(conn *sddbus.Conn, unit string) error {
		if err := conn.ResetFailedUnitContext(ctx, unit); err != nil {
			return fmt.Errorf("reset-failed %s: %w", unit, err)
		}
		return nil
	})
}

// startLimitHit reports whether the unit's last start was refused by its
// start limit.
func startLimitHit(ctx context.Context, conn *sddbus.Conn, unit string) bool {
	p, err := conn.GetUnitTypePropertyContext(ctx, unit, "Service", "Result")
	if err != nil {
		return false
	}
	v, _ := p.Value.Value().(string)
	return v == "start-limit-hit"
}

func restart(ctx context.Context, conn *sddbus.Conn, unit string) error {
	done := make(chan string, 1)
	if _, err := conn.RestartUnitContext(ctx, unit, "replace", done); err != nil {
		return fmt.Errorf("%w: restart %s: %w", ErrRestartFailed, unit, err)
	}
	select {
	case result := <-done:
		if result != "done" {
			return fmt.Errorf("%w: restart job of %s ended %q", ErrRestartFailed, unit, result)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: waiting for the restart of %s: %w", ErrRestartFailed, unit, ctx.Err())
	}
}
