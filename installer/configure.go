package installer

import (
	"context"
	"errors"
	"slices"

	"github.com/shimkit/shimkit/containerdconfig"
)

// proxyType is the containerd proxy plugin type of sandboxer daemons.
const proxyType = "sandbox"

// configure registers the plan's handlers and sandboxer proxy plugins in
// containerd's config, and removes those an earlier version of the Shim
// registered and this one no longer has. Every edit keeps a backup until
// commit.
type configure struct{}

func (configure) name() string { return "configured" }

func (configure) do(ctx context.Context, r *run) error {
	t := r.target
	var muts []containerdconfig.Mutator
	var files []string
	add := func(m containerdconfig.Mutator, file string, err error) error {
		if err != nil {
			return err
		}
		muts = append(muts, m)
		if !slices.Contains(files, file) {
			files = append(files, file)
		}
		return nil
	}
	var errs []error
	evictions, err := r.evictions()
	if err != nil {
		return err
	}
	for _, ev := range evictions {
		fs, err := ev.FilesToEdit()
		if err != nil {
			return err
		}
		muts = append(muts, ev)
		for _, f := range fs {
			if !slices.Contains(files, f) {
				files = append(files, f)
			}
		}
	}
	for k, h := range r.handlers() {
		f, err := t.File(h.Name)
		errs = append(errs, add(&containerdconfig.Install{Target: t, Handler: h, Adopt: r.plan.Handlers[k].Adopt}, f, err))
	}
	for _, sb := range r.plan.Sandboxers {
		f, err := t.ProxyPluginFile(sb.Name)
		errs = append(errs, add(containerdconfig.NewInstallProxyPlugin(t, containerdconfig.ProxyPlugin{Name: sb.Name, Type: proxyType, Address: sb.Address}), f, err))
		r.rec.ProxyPlugins = append(r.rec.ProxyPlugins, sb.Name)
	}
	for _, h := range r.prev.handlers() {
		if !slices.ContainsFunc(r.handlers(), func(n containerdconfig.RuntimeHandler) bool { return n.Name == h }) {
			f, err := t.File(h)
			errs = append(errs, add(containerdconfig.NewUninstall(t, h), f, err))
		}
	}
	for _, p := range r.prev.ProxyPlugins {
		if !slices.Contains(r.rec.ProxyPlugins, p) {
			f, err := t.ProxyPluginFile(p)
			errs = append(errs, add(containerdconfig.NewUninstallProxyPlugin(t, p), f, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, h := range r.handlers() {
		r.rec.Handlers = append(r.rec.Handlers, h.Name)
	}
	r.rec.ConfigFiles = files
	return r.applyConfig(ctx, muts, files)
}

// applyConfig records the files in the pending state, then applies the
// mutators in order.
func (r *run) applyConfig(ctx context.Context, muts []containerdconfig.Mutator, files []string) error {
	r.pending.ConfigFiles = files
	if err := r.savePending(); err != nil {
		return err
	}
	for _, m := range muts {
		c, err := m.Apply(ctx)
		if err != nil {
			return err
		}
		r.changes = append(r.changes, c)
		r.changed = r.changed || c.Changed()
	}
	return nil
}

func (configure) undo(_ context.Context, r *run) error { return r.rollbackConfig() }

// rollbackConfig restores every edited file, newest edit first.
func (r *run) rollbackConfig() error {
	var errs []error
	for k := len(r.changes) - 1; k >= 0; k-- {
		if c := r.changes[k]; c.Changed() {
			errs = append(errs, r.i.settle(r.target, c.Files(), c.Rollback()))
		}
	}
	r.changes = nil
	return errors.Join(errs...)
}

// settle accepts the files of an undo that met another writer's edit
// (ErrConcurrentEdit) as they are: the edit stays, the error is reported
// once, and the next operation is not held up by the pending journal.
func (i *Installer) settle(t containerdconfig.Target, files []string, err error) error {
	if !errors.Is(err, containerdconfig.ErrConcurrentEdit) {
		return err
	}
	for _, f := range files {
		if ferr := containerdconfig.ForgetPending(t.LocalPath(f)); ferr != nil {
			return errors.Join(err, ferr)
		}
	}
	i.log().Error("another writer changed the file after shimkit; left as it is", "files", files, "err", err)
	return err
}

// commitConfig drops the backups, records the directories the edits
// created (a drop-in directory) in the node's state, and removes those
// recorded that are empty now (the last drop-in went).
func (r *run) commitConfig() error {
	var errs []error
	for _, c := range r.changes {
		errs = append(errs, c.Commit())
		for _, d := range c.CreatedDirs() {
			if !slices.Contains(r.state.CreatedDirs, d) {
				r.state.CreatedDirs = append(r.state.CreatedDirs, d)
			}
		}
	}
	r.state.CreatedDirs = slices.DeleteFunc(r.state.CreatedDirs, func(d string) bool {
		gone, err := containerdconfig.RemoveCreatedDir(r.i.root(), d)
		if err != nil {
			r.i.log().Warn("removing a directory shimkit created", "dir", d, "err", err)
		}
		return gone
	})
	if len(r.state.CreatedDirs) == 0 {
		r.state.CreatedDirs = nil
	}
	return errors.Join(errs...)
}
