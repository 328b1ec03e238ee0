package runtime

import (
	"context"
	"errors"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/installer/plan"
)

// Runtime is the node's container runtime as an operation's steps see it
// (package installer's Runtime: configure, restart, check).
type Runtime interface {
	Configure(ctx context.Context, e ConfigEdit) (ConfigChange, error)
	Restart(ctx context.Context) error
	Check(ctx context.Context, handler string, present bool) error
}

// ConfigChange is a config edit on disk, pending until it is committed or
// rolled back byte for byte. containerdconfig.Change and crioconfig.Change
// are ones.
type ConfigChange interface {
	// Changed reports whether any file changed: the runtime must restart.
	Changed() bool
	// Commit makes the change permanent (its backups or journal go).
	Commit() error
	// Rollback puts back every file that still holds what the change
	// wrote, byte for byte; one someone changed since is left as it is
	// and the error wraps ErrConcurrentEdit.
	Rollback() error
}

// ConfigEdit is what one Shim's operation asks of the runtime's config.
type ConfigEdit struct {
	// Owner is the Shim the handlers are written for.
	Owner string
	// Handlers are the handlers to have, the bundle placeholder resolved;
	// Adopt[k] lets Handlers[k] take over a handler of that name that the
	// node's config already defines (containerd only).
	Handlers []containerdconfig.RuntimeHandler
	Adopt    []bool
	// Remove are handlers the Shim had and no longer has.
	Remove []string
	// Sandboxers are the plan's sandboxer daemons, registered as proxy
	// plugins (containerd only); RemoveProxyPlugins those the Shim no
	// longer has.
	Sandboxers         []plan.Sandboxer
	RemoveProxyPlugins []string
	// Migrate takes a handler over from another installer (containerd
	// only).
	Migrate *plan.Migration
	// Locate returns where a node path is on this machine now: a file of
	// the bundle that is still in staging, for a runtime that checks the
	// handler's binary before it writes (CRI-O). Nil: under the host root.
	Locate func(nodePath string) string
	// Journal is called, before anything is written, with what the edit
	// may write (the config files, as node paths, and the handlers), so
	// that a crash can be undone.
	Journal func(files, handlers []string) error
}

// ErrRuntimeUnsupported: the plan asks the node's runtime for what it does
// not have (a sandboxer's proxy plugin, or a migration from another
// installer, on CRI-O; a handler CRI-O cannot run). Nothing was changed.
var ErrRuntimeUnsupported = errors.New("not supported by the node's container runtime")

// Restarter restarts the runtime's unit: package installer's Restarter.
type Restarter interface {
	Restart(ctx context.Context) error
	ResetFailed(ctx context.Context) error
}

// HealthChecker checks the runtime after a restart: package installer's
// HealthChecker.
type HealthChecker interface {
	Check(ctx context.Context, handler string, present bool) error
}

// Versioner tells the runtime's version (CRIHealth is one).
type Versioner interface {
	RuntimeVersion(ctx context.Context) (string, error)
}
