package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/internal/installer/migrate"
	"github.com/shimkit/shimkit/internal/installer/ownership"
)

// proxyType is the containerd proxy plugin type of sandboxer daemons.
const proxyType = "sandbox"

// containerdRuntimeTypes are the runtime types of containerd's own shims. A
// Shim may use one only to run its own OCI runtime under containerd's shim
// (options.BinaryName, as the NVIDIA and crun runtimes do); the shim binary
// itself is never shimkit's to place.
var containerdRuntimeTypes = []string{"io.containerd.runc.v1", "io.containerd.runc.v2", "io.containerd.runhcs.v1"}

// containerdRuntime is the Runtime of a containerd node: handlers and
// proxy plugins in the config the preset names (package
// containerdconfig), a restart of the preset's unit through systemd, a
// check over CRI.
type containerdRuntime struct {
	t         containerdconfig.Target
	restarter Restarter
	health    HealthChecker
	offline   bool
	log       *slog.Logger
}

var (
	_ Runtime        = (*containerdRuntime)(nil)
	_ handlerChecker = (*containerdRuntime)(nil)
	_ handlerFinder  = (*containerdRuntime)(nil)
	_ PathFinder     = (*containerdRuntime)(nil)
)

func (c *containerdRuntime) Restart(ctx context.Context) error { return c.restarter.Restart(ctx) }

func (c *containerdRuntime) Check(ctx context.Context, handler string, present bool) error {
	return c.health.Check(ctx, handler, present)
}

func (c *containerdRuntime) HasHandler(name string) (bool, error) { return c.t.HasHandler(name) }

// GeneratesRuntimeFor reports whether the preset's distribution renders a
// runtime table of its own for a binary of that name on its PATH.
func (c *containerdRuntime) GeneratesRuntimeFor(bin string) bool {
	return c.t.Preset.GeneratesRuntimeFor(bin)
}

// NeedsLinks asks containerd its version (over CRI) and reports whether it
// needs shim binaries on its PATH: true for 1.6 and older, and when the
// version cannot be read.
func (c *containerdRuntime) NeedsLinks(ctx context.Context) (string, bool) {
	v, ok := c.health.(Versioner)
	if !ok || c.offline {
		return "", true
	}
	version, err := v.RuntimeVersion(ctx)
	if err != nil {
		c.log.Warn("reading containerd's version", "err", err)
		return "", true
	}
	return version, versionBefore17(version)
}

// versionBefore17 reports whether a containerd version string ("1.6.20",
// "v2.2.1", "1.6.20~ds1") is older than 1.7; an unreadable one counts as
// old.
func versionBefore17(v string) bool {
	var major, minor int
	if _, err := fmt.Sscanf(strings.TrimPrefix(v, "v"), "%d.%d", &major, &minor); err != nil {
		return true
	}
	return major < 1 || major == 1 && minor < 7
}

// Configure registers the handlers and proxy plugins in containerd's
// config and removes those the edit drops, each edit keeping a backup
// until commit. A migration's eviction comes first. The files are
// journaled before the first is written; when an edit fails, those done
// are rolled back.
func (c *containerdRuntime) Configure(ctx context.Context, e ConfigEdit) (ConfigChange, error) {
	muts, files, err := c.mutators(e)
	if err != nil {
		return nil, err
	}
	if err := e.Journal(files, nil); err != nil {
		return nil, err
	}
	var done Changes
	for _, m := range muts {
		ch, err := m.Apply(ctx)
		if err != nil {
			return nil, errors.Join(err, done.Rollback())
		}
		done = append(done, &containerdChange{Change: ch, t: c.t, log: c.log})
	}
	return done, nil
}

// mutators are the edits of e, in order, and the files they edit.
func (c *containerdRuntime) mutators(e ConfigEdit) ([]containerdconfig.Mutator, []string, error) {
	t := c.t
	var muts []containerdconfig.Mutator
	var files []string
	var errs []error
	add := func(m containerdconfig.Mutator, fs []string, err error) {
		if err != nil {
			errs = append(errs, err)
			return
		}
		muts = append(muts, m)
		for _, f := range fs {
			if !slices.Contains(files, f) {
				files = append(files, f)
			}
		}
	}
	if m := e.Migrate; m != nil {
		ev := &containerdconfig.Evict{Target: t, Name: m.Handler, Match: migrate.FromRCM(m.Handler), Files: migrate.Files(t.Preset.Name)}
		fs, err := ev.FilesToEdit()
		add(ev, fs, err)
	}
	for k, h := range e.Handlers {
		f, err := t.File(h.Name)
		add(&containerdconfig.Install{Target: t, Handler: h, Adopt: k < len(e.Adopt) && e.Adopt[k]}, []string{f}, err)
	}
	for _, sb := range e.Sandboxers {
		f, err := t.ProxyPluginFile(sb.Name)
		add(containerdconfig.NewInstallProxyPlugin(t, containerdconfig.ProxyPlugin{Name: sb.Name, Type: proxyType, Address: sb.Address}), []string{f}, err)
	}
	for _, h := range e.Remove {
		f, err := t.File(h)
		add(containerdconfig.NewUninstall(t, h), []string{f}, err)
	}
	for _, p := range e.RemoveProxyPlugins {
		f, err := t.ProxyPluginFile(p)
		add(containerdconfig.NewUninstallProxyPlugin(t, p), []string{f}, err)
	}
	return muts, files, errors.Join(errs...)
}

// containerdChange is a containerdconfig.Change whose rollback settles a
// file someone else changed since (see settleConcurrent).
type containerdChange struct {
	*containerdconfig.Change
	t   containerdconfig.Target
	log *slog.Logger
}

func (c *containerdChange) Rollback() error {
	return settleConcurrent(c.t, c.log, c.Files(), c.Change.Rollback())
}

// settleConcurrent accepts the files of an undo that met another writer's
// edit (ErrConcurrentEdit) as they are: the edit stays, the error is
// reported once, and the next operation is not held up by the pending
// journal.
func settleConcurrent(t containerdconfig.Target, log *slog.Logger, files []string, err error) error {
	if !errors.Is(err, containerdconfig.ErrConcurrentEdit) {
		return err
	}
	for _, f := range files {
		if ferr := containerdconfig.ForgetPending(t.LocalPath(f)); ferr != nil {
			return errors.Join(err, ferr)
		}
	}
	log.Error("another writer changed the file after shimkit; left as it is", "files", files, "err", err)
	return err
}

// checkHandlers refuses, before anything changes, containerd's own
// handler and runtime types, the node's default runtime, and a handler
// the Shim does not have yet (prev) that the config already defines,
// unless adopted or migrated.
func (c *containerdRuntime) checkHandlers(e ConfigEdit, prev []string) error {
	root, _, err := c.t.RootConfig() // nil when the node has none yet
	if err != nil {
		return err
	}
	if err := c.checkReserved(e, root); err != nil {
		return err
	}
	var errs []error
	for k, h := range e.Handlers {
		if slices.Contains(prev, h.Name) || k < len(e.Adopt) && e.Adopt[k] || e.Migrate != nil && e.Migrate.Handler == h.Name {
			continue
		}
		file, has, err := c.definedAnywhere(h.Name, root)
		switch {
		case err != nil:
			errs = append(errs, err)
		case has:
			errs = append(errs, fmt.Errorf("%w: handler %q is already defined in %s and shimkit did not write it; adopt it explicitly to take it over", ownership.ErrConflict, h.Name, file))
		}
	}
	return errors.Join(errs...)
}

// checkReserved refuses containerd's own handler and runtime types and the
// node's default runtime (default_runtime_name of root, the root config;
// runc when there is none).
func (c *containerdRuntime) checkReserved(e ConfigEdit, root *containerdconfig.Config) error {
	def, file := "runc", c.t.Preset.Config
	if root != nil {
		def = root.DefaultRuntime
	}
	for _, h := range e.Handlers {
		switch {
		case h.Name == "runc":
			return fmt.Errorf("%w: handler %q of Shim %s is containerd's own runc handler", ownership.ErrReserved, h.Name, e.Owner)
		case h.Name == def:
			return fmt.Errorf("%w: handler %q of Shim %s is the node's default runtime (default_runtime_name in %s)", ownership.ErrReserved, h.Name, e.Owner, file)
		case slices.Contains(containerdRuntimeTypes, h.RuntimeType) && h.Options["BinaryName"] == nil:
			return fmt.Errorf("%w: handler %q of Shim %s: runtime type %s is containerd's own shim; a Shim may use it only with options.BinaryName (its OCI runtime under containerd's shim)",
				ownership.ErrReserved, h.Name, e.Owner, h.RuntimeType)
		}
	}
	return nil
}

func (c *containerdRuntime) definedAnywhere(handler string, root *containerdconfig.Config) (file string, has bool, err error) {
	if has, err := c.t.HasHandler(handler); err != nil || has {
		f, _ := c.t.File(handler)
		return f, has, err
	}
	return c.t.Preset.Config, root != nil && root.HasHandler(handler), nil
}
