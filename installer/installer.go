package installer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"path/filepath"
	"time"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/fetch"
)

// Errors of a failed operation, checked with errors.Is.
var (
	// ErrRolledBack: the operation failed and the node was restored: the
	// config byte for byte, the binary, and a healthy containerd.
	ErrRolledBack = errors.New("failed and rolled back; the node is as it was")
	// ErrRollbackFailed: the operation failed and restoring the node failed
	// too. The node needs attention.
	ErrRollbackFailed = errors.New("FAILED AND THE ROLLBACK FAILED TOO; the node needs attention")
)

// Spec is a shim to install.
type Spec struct {
	// Name identifies the shim in the node's state; default Handler.Name.
	Name string
	// Handler is the runtime handler to register. RuntimePath defaults to
	// the placed binary.
	Handler containerdconfig.RuntimeHandler
	// Fetcher gets the artifact.
	Fetcher fetch.Fetcher
	// Source describes the artifact (URL or reference, and digest) for the
	// spec hash: a different source is an upgrade.
	Source string
}

func (s Spec) name() string {
	if s.Name != "" {
		return s.Name
	}
	return s.Handler.Name
}

// Hash identifies the spec: the same hash means nothing to do.
func (s Spec) Hash() string {
	data, _ := json.Marshal(struct {
		H containerdconfig.RuntimeHandler
		S string
	}{s.Handler, s.Source})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Installer installs shims on one node. Its paths are node paths, resolved
// under HostRoot: the node's / as mounted in a privileged pod, or / itself.
type Installer struct {
	HostRoot string
	// BinDir is where shim binaries go; default /opt/shimkit/bin.
	BinDir string
	// LinkDir gets a symlink to each shim binary, so that containerd finds
	// it on its PATH (containerd 1.6 ignores runtime_path for pod
	// sandboxes); default /usr/local/bin, "-" for none. An existing file
	// there is never replaced.
	LinkDir string
	// StateDir holds the state file and the node lock; default
	// /var/lib/shimkit.
	StateDir string
	// Preset overrides the detected distribution.
	Preset *containerdconfig.Preset
	// Mode chooses between the config file and a drop-in.
	Mode containerdconfig.Mode
	// Restarter defaults to systemd over D-Bus with the preset's units.
	Restarter Restarter
	// Health defaults to CRI on the preset's socket.
	Health HealthChecker
	// Platform defaults to the node's.
	Platform fetch.Platform
	// Offline installs into a root filesystem without restarting or
	// checking containerd, as image builders do.
	Offline bool
	// Log receives progress; default discards.
	Log *slog.Logger
	// AfterStep, when set, is called after each step with its name, for
	// progress displays.
	AfterStep func(step string)
}

// Result says what an operation did.
type Result struct {
	Shim      string
	Changed   bool // the config changed
	Restarted bool
	Upgrade   bool // the shim was installed before with another spec
	Digest    string
	Binaries  []string
	// Duration is the whole operation; RestartDuration the restart and the
	// health check within it.
	Duration        time.Duration
	RestartDuration time.Duration
}

func (i *Installer) local(nodePath string) string {
	root := i.HostRoot
	if root == "" {
		root = "/"
	}
	return filepath.Join(root, filepath.FromSlash(nodePath))
}

func (i *Installer) binDir() string   { return orDefault(i.BinDir, "/opt/shimkit/bin") }
func (i *Installer) stateDir() string { return orDefault(i.StateDir, "/var/lib/shimkit") }
func (i *Installer) linkDir() string {
	if i.LinkDir == "-" {
		return ""
	}
	return orDefault(i.LinkDir, "/usr/local/bin")
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (i *Installer) log() *slog.Logger {
	if i.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return i.Log
}

func (i *Installer) step(name string, args ...any) {
	i.log().Info(name, args...)
	if i.AfterStep != nil {
		i.AfterStep(name)
	}
}

func (i *Installer) target() (containerdconfig.Target, error) {
	root := orDefault(i.HostRoot, "/")
	if i.Preset != nil {
		return containerdconfig.Target{Root: root, Preset: *i.Preset, Mode: i.Mode}, nil
	}
	p, err := containerdconfig.Detect(root)
	if err != nil {
		return containerdconfig.Target{}, err
	}
	return containerdconfig.Target{Root: root, Preset: p, Mode: i.Mode}, nil
}

func (i *Installer) restarter(t containerdconfig.Target) Restarter {
	if i.Restarter != nil {
		return i.Restarter
	}
	return &SystemdRestarter{HostRoot: t.Root, Units: t.Preset.Units}
}

func (i *Installer) health(t containerdconfig.Target) HealthChecker {
	if i.Health != nil {
		return i.Health
	}
	return &CRIHealth{Socket: t.LocalPath(t.Preset.Socket)}
}

// restarts reports whether changes need containerd restarted and checked.
func (i *Installer) restarts(t containerdconfig.Target) bool {
	return !i.Offline && (i.Restarter != nil || len(t.Preset.Units) > 0)
}

// restartAndCheck restarts containerd and waits for the handler to be there
// (or gone).
func (i *Installer) restartAndCheck(ctx context.Context, t containerdconfig.Target, handler string, present bool) error {
	if err := i.restarter(t).Restart(ctx); err != nil {
		return err
	}
	i.step("restarted")
	if err := i.health(t).Check(ctx, handler, present); err != nil {
		return err
	}
	i.step("healthy")
	return nil
}

// recoverPending undoes what an operation that died left half done: it
// restores config backups and replaced binaries. It reports whether
// anything was pending, in which case containerd must be restarted.
func (i *Installer) recoverPending(s *State) (bool, error) {
	p := s.Pending
	if p == nil {
		return false, nil
	}
	i.log().Warn("recovering from an interrupted operation", "op", p.Op, "shim", p.Shim)
	var errs []error
	for _, f := range p.ConfigFiles {
		if _, err := containerdconfig.Restore(i.local(f)); err != nil {
			errs = append(errs, err)
		}
	}
	for dst, backup := range p.Binaries {
		if backup != "" {
			errs = append(errs, restoreBinary(i.local(dst), i.local(backup)))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return true, fmt.Errorf("recover interrupted %s of %s: %w", p.Op, p.Shim, err)
	}
	s.Pending = nil
	return true, i.writeState(s)
}

func (i *Installer) binaryPath(name string) string { return path.Join(i.binDir(), name) }

// session is an operation that holds the node lock.
type session struct {
	unlock    func()
	state     *State
	recovered bool // an interrupted operation was undone: containerd must restart
	target    containerdconfig.Target
}

// begin takes the node lock, reads the state, recovers an interrupted
// operation and resolves the node's containerd configuration.
func (i *Installer) begin(ctx context.Context, shim string) (*session, error) {
	unlock, err := i.lock(ctx)
	if err != nil {
		return nil, err
	}
	i.step("locked", "shim", shim)
	s := &session{unlock: unlock}
	if s.state, err = i.readState(); err == nil {
		if s.recovered, err = i.recoverPending(s.state); err == nil {
			s.target, err = i.target()
		}
	}
	if err != nil {
		unlock()
		return nil, err
	}
	return s, nil
}
