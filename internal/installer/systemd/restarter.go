package systemd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
)

// ErrRestartFailed: the restart job did not end in "done".
var ErrRestartFailed = errors.New("restart failed")

// ErrNoUnit: none of the candidate units runs containerd.
var ErrNoUnit = errors.New("no unit runs containerd")

// Restarter restarts a systemd unit over D-Bus, from inside a privileged
// pod or on the node itself, with nothing installed on the host: it
// connects to systemd's private socket under the host root, or to the
// system bus socket when the private one refuses (it does for a process
// outside systemd's PID namespace).
type Restarter struct {
	// HostRoot is where the node's / is mounted ("/" on the node).
	HostRoot string
	// Units are the candidate units, in order (for example k3s, then
	// k3s-agent). The one restarted is the one that runs containerd: when
	// several are loaded (an RKE2 tarball install loads rke2-server and
	// rke2-agent), the running one (active, activating or reloading;
	// among several, the one whose main process is containerd's parent),
	// else one that failed; a unit that is merely loaded is never picked.
	// One loaded candidate is the one, whatever its state.
	Units []string
}

// candidate is a loaded candidate unit and how it runs.
type candidate struct {
	name    string
	rank    int // 2 running, 1 failed, 0 merely loaded
	mainPID uint32
}

// unit returns the candidate unit that runs containerd (see Units).
func (s *Restarter) unit(ctx context.Context, conn *sddbus.Conn) (string, error) {
	var loaded []candidate
	for _, u := range s.Units {
		name := u
		if filepath.Ext(name) == "" {
			name += ".service"
		}
		props, err := conn.GetUnitPropertiesContext(ctx, name)
		if err != nil || props["LoadState"] != "loaded" {
			continue
		}
		c := candidate{name: name}
		switch props["ActiveState"] {
		case "active", "activating", "reloading", "deactivating":
			c.rank = 2
		case "failed":
			c.rank = 1
		}
		if p, err := conn.GetServicePropertyContext(ctx, name, "MainPID"); err == nil {
			c.mainPID, _ = p.Value.Value().(uint32)
		}
		loaded = append(loaded, c)
	}
	return pickUnit(loaded, containerdParents(s.HostRoot), s.Units)
}

// pickUnit chooses among the loaded candidates (see Units); parents are
// the parent pids of the node's containerd processes.
func pickUnit(loaded []candidate, parents []uint32, units []string) (string, error) {
	if len(loaded) == 1 {
		return loaded[0].name, nil
	}
	best := -1
	for k, c := range loaded {
		switch {
		case c.rank == 0:
		case best < 0 || c.rank > loaded[best].rank:
			best = k
		case c.rank == 2 && loaded[best].rank == 2 && slices.Contains(parents, c.mainPID) && !slices.Contains(parents, loaded[best].mainPID):
			best = k
		}
	}
	if best < 0 {
		var names []string
		for _, c := range loaded {
			names = append(names, c.name)
		}
		if len(names) == 0 {
			return "", fmt.Errorf("%w: none of the units %v is loaded", ErrNoUnit, units)
		}
		return "", fmt.Errorf("%w: the units %v are loaded but none runs (none active or failed); shimkit restarts only the unit that runs containerd", ErrNoUnit, names)
	}
	return loaded[best].name, nil
}

// containerdParents returns the parent pids of the processes named
// containerd under root's /proc (none when it cannot be read: a node
// root without the host's /proc, another PID namespace).
func containerdParents(root string) []uint32 {
	if root == "" {
		root = "/"
	}
	dirs, _ := filepath.Glob(filepath.Join(root, "proc", "[0-9]*", "status"))
	var out []uint32
	for _, p := range dirs {
		data, err := os.ReadFile(p)
		if err != nil || !bytes.HasPrefix(data, []byte("Name:\tcontainerd\n")) {
			continue
		}
		if _, after, ok := bytes.Cut(data, []byte("\nPPid:\t")); ok {
			var ppid uint32
			if _, err := fmt.Sscanf(string(after), "%d", &ppid); err == nil {
				out = append(out, ppid)
			}
		}
	}
	return out
}

// onUnit connects to systemd and runs fn on the first loaded candidate
// unit.
func (s *Restarter) onUnit(ctx context.Context, fn func(conn *sddbus.Conn, unit string) error) error {
	conn, err := connect(ctx, s.HostRoot)
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

// Restart restarts the unit and waits for the job's result. When the job
// fails, the failed state and the start-limit counter are reset and the
// restart tried once more: systemd refuses a unit at its start limit
// (StartLimitBurst counts manual restarts too, so a few installs in a row
// reach it), and then its Result is start-limit-hit only when the unit's
// last run ended well: after a stop that exited non-zero it stays
// exit-code, so the job's failure is what tells.
func (s *Restarter) Restart(ctx context.Context) error {
	return s.onUnit(ctx, func(conn *sddbus.Conn, unit string) error {
		err := restart(ctx, conn, unit)
		if err == nil || !errors.Is(err, errJobFailed) && !startLimitHit(ctx, conn, unit) {
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
func (s *Restarter) ResetFailed(ctx context.Context) error {
	return s.onUnit(ctx, func(conn *sddbus.Conn, unit string) error {
		if err := conn.ResetFailedUnitContext(ctx, unit); err != nil {
			return fmt.Errorf("reset-failed %s: %w", unit, err)
		}
		return nil
	})
}

// errJobFailed: a restart job ended "failed" (a start refused at the
// unit's start limit, or a start that failed).
var errJobFailed = errors.New("the unit did not start")

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
		switch result {
		case "done":
			return nil
		case "failed":
			return fmt.Errorf("%w: restart job of %s ended %q: %w", ErrRestartFailed, unit, result, errJobFailed)
		}
		return fmt.Errorf("%w: restart job of %s ended %q", ErrRestartFailed, unit, result)
	case <-ctx.Done():
		return fmt.Errorf("%w: waiting for the restart of %s: %w", ErrRestartFailed, unit, ctx.Err())
	}
}

// UnitState returns the unit that runs the runtime and its ActiveState
// and SubState ("activating", "start": a start that has not finished),
// for a failure's diagnosis.
func (s *Restarter) UnitState(ctx context.Context) (unit, active, sub string, err error) {
	err = s.onUnit(ctx, func(conn *sddbus.Conn, name string) error {
		props, err := conn.GetUnitPropertiesContext(ctx, name)
		if err != nil {
			return fmt.Errorf("properties of %s: %w", name, err)
		}
		unit = name
		active, _ = props["ActiveState"].(string)
		sub, _ = props["SubState"].(string)
		return nil
	})
	return unit, active, sub, err
}
