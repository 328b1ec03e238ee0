package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/crioconfig"
	"github.com/shimkit/shimkit/internal/installer/layout"
	"github.com/shimkit/shimkit/internal/installer/ownership"
)

// crioRuntime is the Runtime of a CRI-O node: each handler in a drop-in of
// shimkit's own (package crioconfig: checked, binary included, before
// anything is written; journaled; rolled back byte for byte), a restart
// of crio.service through systemd (never a reload: after a SIGHUP CRI-O
// announces a handler whose pods fail, cri-o #10202), and the handler
// required in the CRI status, since CRI-O drops a handler it cannot use
// and starts without it.
type crioRuntime struct {
	t         crioconfig.Target
	restarter Restarter
	health    HealthChecker
	log       *slog.Logger
	// cgroupV1 reports whether the host's systemd tracks units in cgroup
	// v1 (crioconfig.Snapshot.CheckRestart); nil unless the installer
	// restarts crio.service through systemd itself (no Restarter of the
	// caller's, not Offline).
	cgroupV1 func() bool
}

var (
	_ Runtime        = (*crioRuntime)(nil)
	_ handlerChecker = (*crioRuntime)(nil)
	_ handlerFinder  = (*crioRuntime)(nil)
)

func (c *crioRuntime) Restart(ctx context.Context) error { return c.restarter.Restart(ctx) }

func (c *crioRuntime) Check(ctx context.Context, handler string, present bool) error {
	return c.health.Check(ctx, handler, present)
}

// HasHandler reports whether shimkit's drop-in of the handler is among
// the files CRI-O reads and defines it.
func (c *crioRuntime) HasHandler(name string) (bool, error) {
	snap, err := crioconfig.Scan(c.t)
	if err != nil {
		return false, err
	}
	return slices.Contains(snap.DefiningFiles(name), c.t.DropInPath(name)), nil
}

// Configure writes each handler's drop-in and removes those of the
// handlers the edit drops, one crioconfig.Change each; when one fails,
// those done are rolled back.
func (c *crioRuntime) Configure(ctx context.Context, e ConfigEdit) (ConfigChange, error) {
	hs, err := c.convert(e)
	if err != nil {
		return nil, err
	}
	var files, names []string
	for _, h := range hs {
		files, names = append(files, c.t.DropInPath(h.Name)), append(names, h.Name)
	}
	for _, name := range e.Remove {
		files, names = append(files, c.t.DropInPath(name)), append(names, name)
	}
	if err := e.Journal(files, names); err != nil {
		return nil, err
	}
	w := &crioconfig.Writer{Target: c.t, Owner: e.Owner, Locate: e.Locate}
	missing := c.missingDirs()
	var done Changes
	apply := func(handler string, ch *crioconfig.Change, err error) error {
		if err != nil {
			return errors.Join(err, done.Rollback())
		}
		done = append(done, &crioChange{Change: ch, t: c.t, handler: handler, log: c.log})
		return nil
	}
	for _, h := range hs {
		ch, err := w.Install(ctx, h)
		if err := apply(h.Name, ch, err); err != nil {
			return nil, err
		}
	}
	for _, name := range e.Remove {
		ch, err := w.Uninstall(ctx, name)
		if err := apply(name, ch, err); err != nil {
			return nil, err
		}
	}
	var created []string
	for _, d := range missing {
		if dirExists(c.local(d)) {
			created = append(created, d)
		}
	}
	return &crioEdit{Changes: done, created: created, root: c.t.Root}, nil
}

// missingDirs are the drop-in and state directories that do not exist
// yet: a change creates them, and the state records them so that they go
// once empty (uninstall leaves /etc/crio as it was).
func (c *crioRuntime) missingDirs() []string {
	var out []string
	for _, d := range []string{crioStateDir(c.t), crioDropInDir(c.t)} {
		if !dirExists(c.local(d)) {
			out = append(out, d)
		}
	}
	return out
}

func (c *crioRuntime) local(nodePath string) string {
	return layout.Layout{Host: c.t.Root}.Local(nodePath)
}

// crioEdit is one edit's changes and the directories they created (node
// paths under root).
type crioEdit struct {
	Changes
	created []string
	root    string
}

func (e *crioEdit) CreatedDirs() []string { return e.created }

// Rollback undoes the changes, then removes the directories they created
// when empty: /etc/crio as it was.
func (e *crioEdit) Rollback() error {
	errs := []error{e.Changes.Rollback()}
	for _, d := range e.created {
		_, err := containerdconfig.RemoveCreatedDir(e.root, d)
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// checkHandlers refuses, before anything changes, what CRI-O cannot have
// (a proxy plugin, a migration, an adopted handler, a handler it cannot
// run), a handler that a file shimkit did not write defines, or that is
// CRI-O's default runtime, and a restart that would stop every pod of the
// node. The binary is checked when the drop-in is
// written (the bundle is not laid out yet).
func (c *crioRuntime) checkHandlers(e ConfigEdit, prev []string) error {
	hs, err := c.convert(e)
	if err != nil {
		return err
	}
	snap, err := crioconfig.Scan(c.t)
	if err != nil {
		return err
	}
	var errs []error
	if c.cgroupV1 != nil && c.changes(e.Owner, hs, prev) {
		errs = append(errs, snap.CheckRestart(c.cgroupV1()))
	}
	for _, h := range hs {
		if h.Name == snap.DefaultRuntime() || h.Name == "crun" {
			errs = append(errs, fmt.Errorf("%w: %w: handler %q of Shim %s is CRI-O's own (its default runtime, or its built-in crun)", ownership.ErrReserved, crioconfig.ErrReserved, h.Name, e.Owner))
			continue
		}
		for _, f := range snap.DefiningFiles(h.Name) {
			if f != c.t.DropInPath(h.Name) {
				errs = append(errs, fmt.Errorf("%w: %w: handler %q is already defined in %s and shimkit did not write it", ownership.ErrConflict, crioconfig.ErrForeignHandler, h.Name, f))
			}
		}
	}
	return errors.Join(errs...)
}

// changes reports whether configuring hs for owner, where the Shim had
// prev, would change a file, and so restart CRI-O: a handler dropped, or
// one whose drop-in is not exactly what it would be. When it cannot tell,
// it says yes.
func (c *crioRuntime) changes(owner string, hs []crioconfig.RuntimeHandler, prev []string) bool {
	w := &crioconfig.Writer{Target: c.t, Owner: owner}
	for _, p := range prev {
		if !slices.ContainsFunc(hs, func(h crioconfig.RuntimeHandler) bool { return h.Name == p }) {
			return true
		}
	}
	for _, h := range hs {
		if same, err := w.Holds(h); err != nil || !same {
			return true
		}
	}
	return false
}

// convert turns the edit's handlers into CRI-O's, refusing what CRI-O
// cannot have.
func (c *crioRuntime) convert(e ConfigEdit) ([]crioconfig.RuntimeHandler, error) {
	switch {
	case len(e.Sandboxers)+len(e.RemoveProxyPlugins) > 0:
		return nil, fmt.Errorf("%w: sandboxers are containerd proxy plugins; CRI-O has none", ErrRuntimeUnsupported)
	case e.Migrate != nil:
		return nil, fmt.Errorf("%w: migrate: runtime-class-manager installs into containerd only", ErrRuntimeUnsupported)
	case slices.Contains(e.Adopt, true):
		return nil, fmt.Errorf("%w: adopt: shimkit never takes over a CRI-O handler someone else wrote (a later drop-in would replace it whole)", ErrRuntimeUnsupported)
	}
	var out []crioconfig.RuntimeHandler
	for _, h := range e.Handlers {
		ch, err := crioHandler(h)
		if err != nil {
			return nil, err
		}
		if err := ch.Validate(); err != nil {
			return nil, err
		}
		out = append(out, ch)
	}
	return out, nil
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// crioChange is a crioconfig.Change whose rollback settles a drop-in
// someone else changed since: left as it is, its journal dropped.
type crioChange struct {
	*crioconfig.Change
	t       crioconfig.Target
	handler string
	log     *slog.Logger
}

func (c *crioChange) Rollback() error {
	return settleCRIO(c.t, c.log, c.handler, c.Change.Rollback())
}

// settleCRIO accepts a handler's files as they are after an undo met
// another writer's edit (crioconfig.ErrConcurrentEdit).
func settleCRIO(t crioconfig.Target, log *slog.Logger, handler string, err error) error {
	if !errors.Is(err, crioconfig.ErrConcurrentEdit) {
		return err
	}
	if ferr := crioconfig.ForgetPending(t, handler); ferr != nil {
		return errors.Join(err, ferr)
	}
	log.Error("another writer changed shimkit's CRI-O drop-in; left as it is", "handler", handler, "err", err)
	return err
}

// hostCgroupV1 reports whether systemd tracks units in cgroup v1 on this
// machine (legacy or hybrid): /sys/fs/cgroup is not a cgroup2 mount. The
// installer's pod sees the node's kind of hierarchy, as its runtime
// mounts the one the kernel booted with.
func hostCgroupV1() bool {
	var st unix.Statfs_t
	return unix.Statfs("/sys/fs/cgroup", &st) == nil && st.Type != unix.CGROUP2_SUPER_MAGIC
}
