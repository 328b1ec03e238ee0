package installer

import (
	"context"
	"path/filepath"
	"slices"
	"strings"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/installer/plan"
)

// configure registers the plan's handlers (and, on containerd, sandboxer
// proxy plugins) in the runtime's config, and removes those an earlier
// version of the Shim registered and this one no longer has, through the
// node's Runtime. Every edit keeps a backup (or journal) until commit.
type configure struct{}

func (configure) name() string { return "configured" }

func (configure) do(ctx context.Context, r *run) error {
	e := r.configEdit()
	for k, h := range r.handlers() {
		e.Handlers = append(e.Handlers, h)
		e.Adopt = append(e.Adopt, r.plan.Handlers[k].Adopt)
	}
	e.Sandboxers, e.Migrate = r.plan.Sandboxers, r.plan.Migrate
	for _, h := range r.prev.handlers() {
		if !slices.Contains(r.handlerNames(), h) {
			e.Remove = append(e.Remove, h)
		}
	}
	for _, sb := range r.plan.Sandboxers {
		r.rec.ProxyPlugins = append(r.rec.ProxyPlugins, sb.Name)
	}
	for _, p := range r.prev.ProxyPlugins {
		if !slices.Contains(r.rec.ProxyPlugins, p) {
			e.RemoveProxyPlugins = append(e.RemoveProxyPlugins, p)
		}
	}
	if err := r.applyConfig(ctx, e); err != nil {
		return err
	}
	r.rec.Handlers = r.handlerNames()
	r.rec.ConfigFiles = r.pending.ConfigFiles
	return nil
}

func (configure) undo(_ context.Context, r *run) error { return r.rollbackConfig() }

// unconfigure removes the Shim's handlers and proxy plugins from the
// runtime's config.
type unconfigure struct{}

func (unconfigure) name() string { return "configured" }

func (unconfigure) do(ctx context.Context, r *run) error {
	e := r.configEdit()
	e.Remove, e.RemoveProxyPlugins = r.prev.handlers(), r.prev.ProxyPlugins
	return r.applyConfig(ctx, e)
}

func (unconfigure) undo(_ context.Context, r *run) error { return r.rollbackConfig() }

// configEdit starts the run's edit: its owner, where the staged bundle
// is, and the journal.
func (r *run) configEdit() ConfigEdit {
	current := r.i.paths().currentDir(r.plan.Shim.Name)
	return ConfigEdit{
		Owner: r.plan.Shim.Name,
		Locate: func(nodePath string) string {
			if rest, ok := strings.CutPrefix(nodePath, current+"/"); ok && r.stagedVer != "" {
				return filepath.Join(r.staging, r.stagedVer, filepath.FromSlash(rest))
			}
			return r.i.paths().local(nodePath)
		},
		Journal: func(files, handlers []string) error {
			r.pending.ConfigFiles, r.pending.Handlers = files, handlers
			r.pending.Runtime = r.rt.recorded()
			return r.savePending()
		},
	}
}

// applyConfig has the runtime apply the edit (which journals it first).
func (r *run) applyConfig(ctx context.Context, e ConfigEdit) error {
	c, err := r.rt.Configure(ctx, e)
	if err != nil {
		return err
	}
	r.changes = append(r.changes, c)
	r.changed = r.changed || c.Changed()
	return nil
}

// rollbackConfig restores every edited file, newest edit first.
func (r *run) rollbackConfig() error {
	err := r.changes.Rollback()
	r.changes = nil
	return err
}

// commitConfig drops the backups, records the directories the edits
// created (a drop-in directory) in the node's state, and removes those
// recorded that are empty now (the last drop-in went).
func (r *run) commitConfig() error {
	err := r.changes.Commit()
	for _, d := range r.changes.CreatedDirs() {
		if !slices.Contains(r.state.CreatedDirs, d) {
			r.state.CreatedDirs = append(r.state.CreatedDirs, d)
		}
	}
	r.state.CreatedDirs = slices.DeleteFunc(r.state.CreatedDirs, func(d string) bool {
		gone, err := containerdconfig.RemoveCreatedDir(r.i.paths().root(), d)
		if err != nil {
			r.i.log().Warn("removing a directory shimkit created", "dir", d, "err", err)
		}
		return gone
	})
	if len(r.state.CreatedDirs) == 0 {
		r.state.CreatedDirs = nil
	}
	return err
}

// recorded is the runtime as the state records it: "" for containerd,
// as records before CRI-O.
func (n *nodeRuntime) recorded() string {
	if n.kind == plan.RuntimeContainerd {
		return ""
	}
	return n.kind
}
