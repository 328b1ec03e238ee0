package installer

import (
	"context"
	"errors"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/installer/plan"
)

// Runtime is the node's container runtime as an operation's steps see it:
// the one role that differs between containerd and CRI-O. Every other step
// (fetch, bundle, links, units, state, canary) is the same on both.
//
// The installer picks the implementation per node (the plan's runtime,
// else detection): containerd's edits its config with package
// containerdconfig and restarts the preset's unit; CRI-O's writes a
// drop-in of shimkit's own with package crioconfig and restarts
// crio.service. Both restart through systemd, never with SIGHUP, and
// check over CRI. installertest.FakeRuntime is the in-memory one of tests.
type Runtime interface {
	// Configure writes the handlers' config (and removes the handlers
	// the edit drops) as one change, checked before anything is written.
	// A failed Configure leaves nothing changed.
	Configure(ctx context.Context, e ConfigEdit) (ConfigChange, error)
	// Restart restarts the runtime so that it reads its config again,
	// and returns once the restart ended.
	Restart(ctx context.Context) error
	// Check waits until the runtime is ready and the handler is
	// registered (present) or gone (!present); handler "" checks only
	// readiness.
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

// unwrap returns the Runtime a nodeRuntime carries, for the optional roles
// below.
func unwrap(rt Runtime) Runtime {
	if n, ok := rt.(*nodeRuntime); ok {
		return n.Runtime
	}
	return rt
}

// The optional roles below are asked for with a type assertion: a runtime
// without one does without what it serves.

// handlerChecker refuses, before anything changes, a handler the node's
// config defines and shimkit did not write, or a reserved name.
type handlerChecker interface {
	checkHandlers(e ConfigEdit, prev []string) error
}

// handlerFinder reports whether the runtime's config (the file shimkit
// writes the handler to) defines a handler: drift.
type handlerFinder interface {
	HasHandler(name string) (bool, error)
}

// pathFinder is a runtime that may find shim binaries by name on its PATH
// (containerd 1.6, and a distribution that renders a runtime table for a
// binary it finds there): linkShims asks it.
type pathFinder interface {
	// needsLinks reports whether the runtime needs shim binaries on its
	// PATH, and its version.
	needsLinks(ctx context.Context) (version string, needed bool)
	// generatesRuntimeFor reports whether the distribution renders a
	// runtime table of its own for a binary of that name on its PATH.
	generatesRuntimeFor(bin string) bool
}

// failedResetter clears a failed unit before a rollback's restart.
type failedResetter interface {
	ResetFailed(ctx context.Context) error
}

// dirCreator is a ConfigChange that created directories (a drop-in
// directory) the state records and removes once empty.
type dirCreator interface {
	CreatedDirs() []string
}

// changes is the ConfigChanges of one edit, in order: one change.
type changes []ConfigChange

func (cs changes) Changed() bool {
	for _, c := range cs {
		if c.Changed() {
			return true
		}
	}
	return false
}

func (cs changes) Commit() error {
	var errs []error
	for _, c := range cs {
		errs = append(errs, c.Commit())
	}
	return errors.Join(errs...)
}

// Rollback undoes the changes, newest first.
func (cs changes) Rollback() error {
	var errs []error
	for k := len(cs) - 1; k >= 0; k-- {
		if cs[k].Changed() {
			errs = append(errs, cs[k].Rollback())
		}
	}
	return errors.Join(errs...)
}

func (cs changes) CreatedDirs() []string {
	var out []string
	for _, c := range cs {
		if d, ok := c.(dirCreator); ok {
			out = append(out, d.CreatedDirs()...)
		}
	}
	return out
}
