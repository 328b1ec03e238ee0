package units

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/installer/layout"
	"github.com/shimkit/shimkit/internal/installer/ownership"
	"github.com/shimkit/shimkit/internal/installer/systemd"
)

const backupSuffix = ".shimkit-backup"

// UnitManager runs units: daemon-reload, (re)start, stop.
type UnitManager interface {
	Reload(ctx context.Context) error
	Restart(ctx context.Context, unit string) error
	Stop(ctx context.Context, unit string) error
}

var _ UnitManager = (*systemd.Units)(nil)

// Units are the sandboxer units of a node: their files under the layout's
// unit directory and the manager that runs them.
type Units struct {
	Layout layout.Layout
	// Manager runs the units; nil: systemd over D-Bus under the host root.
	Manager UnitManager
	// Offline: files only, nothing stopped, reloaded or started.
	Offline bool
}

// File is a unit file to write: its node path and content.
type File struct {
	Path    string
	Content []byte
}

func (u Units) manager() UnitManager {
	if u.Manager != nil {
		return u.Manager
	}
	return &systemd.Units{HostRoot: u.Layout.Root()}
}

func (u Units) unitDir() string { return u.Layout.Local(u.Layout.UnitDir()) }

// Plan renders the sandboxers' units of shim: the node paths of them all
// and the digest of each (nil when none), and the files whose bytes on
// the node differ (todo).
func (u Units) Plan(shim plan.ShimRef, sbs []plan.Sandboxer, bundleDir string, runtimeUnits []string) (paths []string, written map[string]string, todo []File) {
	for _, sb := range sbs {
		p := path.Join(u.Layout.UnitDir(), sb.Unit)
		paths = append(paths, p)
		content := render(shim, sb, bundleDir, runtimeUnits)
		if written == nil {
			written = map[string]string{}
		}
		written[p] = ownership.Digest(content)
		if cur, err := os.ReadFile(u.Layout.Local(p)); err == nil && bytes.Equal(cur, content) {
			continue
		}
		todo = append(todo, File{p, content})
	}
	return paths, written, todo
}

// Write writes the files, each replaced one backed up first, and enables
// them. It returns the node paths it wrote (or began to), for Restore.
func (u Units) Write(files []File) ([]string, error) {
	var done []string
	for _, f := range files {
		local := u.Layout.Local(f.Path)
		if _, err := os.Stat(local); err == nil {
			if err := copyFile(local, local+backupSuffix); err != nil {
				return done, fmt.Errorf("back up unit %s: %w", f.Path, err)
			}
		}
		done = append(done, f.Path)
		if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
			return done, err
		}
		if err := containerdconfig.WriteFileAtomic(local, f.Content, 0o644); err != nil {
			return done, err
		}
		if err := enable(u.unitDir(), path.Base(f.Path)); err != nil {
			return done, err
		}
	}
	return done, nil
}

// Restore stops the units at paths, puts back their backups (and restarts
// those) or removes them. A unit file that no longer holds what shimkit
// wrote (written, by node path) was changed by someone else: it is left
// as it is, and the error wraps ErrConcurrentEdit.
func (u Units) Restore(ctx context.Context, paths []string, written map[string]string) error {
	var errs []error
	var restored []string
	for _, p := range paths {
		local := u.Layout.Local(p)
		if cur, err := os.ReadFile(local); err == nil && written[p] != "" && ownership.Digest(cur) != written[p] {
			errs = append(errs, fmt.Errorf("%w: unit file %s was changed after shimkit wrote it; left as it is", ownership.ErrConcurrentEdit, p))
			_ = removeIfExists(local + backupSuffix)
			continue
		}
		if !u.Offline {
			errs = append(errs, u.manager().Stop(ctx, path.Base(p)))
		}
		if _, err := os.Stat(local + backupSuffix); err == nil {
			errs = append(errs, os.Rename(local+backupSuffix, local))
			restored = append(restored, path.Base(p))
			continue
		}
		errs = append(errs, removeIfExists(local), removeIfExists(wantsLink(u.unitDir(), path.Base(p))))
	}
	if !u.Offline {
		errs = append(errs, u.manager().Reload(ctx))
		for _, name := range restored {
			errs = append(errs, u.manager().Restart(ctx, name))
		}
	}
	return errors.Join(errs...)
}

// Remove stops and removes units for good.
func (u Units) Remove(ctx context.Context, paths []string) error {
	var errs []error
	for _, p := range paths {
		if !u.Offline {
			errs = append(errs, u.manager().Stop(ctx, path.Base(p)))
		}
		errs = append(errs, removeIfExists(u.Layout.Local(p)), removeIfExists(wantsLink(u.unitDir(), path.Base(p))))
	}
	if len(paths) > 0 && !u.Offline {
		errs = append(errs, u.manager().Reload(ctx))
	}
	return errors.Join(errs...)
}

// Commit makes an install's units final: the backups of those it has
// (keep) dropped, and those it had and no longer has stopped and removed.
// It returns the units removed.
func (u Units) Commit(ctx context.Context, keep, had []string) ([]string, error) {
	u.DropBackups(keep)
	var dropped []string
	for _, p := range had {
		if !slices.Contains(keep, p) {
			dropped = append(dropped, p)
		}
	}
	return dropped, u.Remove(ctx, dropped)
}

// DropBackups commits written units.
func (u Units) DropBackups(paths []string) {
	for _, p := range paths {
		_ = removeIfExists(u.Layout.Local(p) + backupSuffix)
	}
}

// Drift lists the units (node paths) that are missing or no longer hold
// what shimkit wrote (written: their digests).
func (u Units) Drift(paths []string, written map[string]string) ([]string, error) {
	var out []string
	for _, p := range paths {
		data, err := os.ReadFile(u.Layout.Local(p))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			out = append(out, "unit "+p+" is missing")
		case err != nil:
			return out, fmt.Errorf("unit %s: %w", p, err)
		case written[p] != "" && ownership.Digest(data) != written[p]:
			out = append(out, "unit "+p+" was changed after shimkit wrote it")
		}
	}
	return out, nil
}

func wantsLink(unitDir, unit string) string {
	return filepath.Join(unitDir, "multi-user.target.wants", unit)
}

func enable(unitDir, unit string) error {
	link := wantsLink(unitDir, unit)
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		return err
	}
	if cur, err := os.Readlink(link); err == nil && cur == filepath.Join("..", unit) {
		return nil
	}
	_ = os.Remove(link)
	return os.Symlink(filepath.Join("..", unit), link)
}

func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return containerdconfig.WriteFileAtomic(dst, data, 0o644)
}

// removeIfExists removes p; a p that is not there is no error.
func removeIfExists(p string) error {
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
