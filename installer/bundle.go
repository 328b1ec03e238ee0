package installer

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// currentLink is the symlink in a Shim's bundle directory that names the
// installed version; BundleDirPlaceholder resolves to it, so the config
// need not change when only the bundle does.
const currentLink = "current"

// placeBundle moves the staged version into the Shim's bundle directory and
// switches "current" to it with one rename: containerd and new pods see
// either the old bundle or the new one, never a mix. The old version stays
// until commit; pods running on it keep running.
type placeBundle struct{ switched bool }

func (*placeBundle) name() string { return "placed" }

func (s *placeBundle) do(_ context.Context, r *run) error {
	i := r.i
	shimDir := i.paths().local(r.rec.BundleDir)
	prev, _ := os.Readlink(filepath.Join(shimDir, currentLink))
	if prev == r.rec.Version && r.stagedVer == "" {
		return nil
	}
	r.pending.BundleDir, r.pending.PrevVersion, r.pending.NewVersion = r.rec.BundleDir, prev, r.rec.Version
	if err := r.savePending(); err != nil {
		return err
	}
	if r.stagedVer != "" {
		dst := filepath.Join(shimDir, r.stagedVer)
		if err := os.RemoveAll(dst); err != nil { // a leftover of a run that died
			return err
		}
		if err := os.Rename(filepath.Join(r.staging, r.stagedVer), dst); err != nil {
			return err
		}
	}
	s.switched, r.changed = true, true
	return switchLink(shimDir, r.rec.Version)
}

func (s *placeBundle) undo(_ context.Context, r *run) error {
	if !s.switched {
		return nil
	}
	return restoreBundle(r.i.paths().local(r.pending.BundleDir), r.pending.PrevVersion, r.pending.NewVersion)
}

// restoreBundle points "current" back at prev (or removes it when there was
// none) and removes the version the operation added.
func restoreBundle(shimDir, prev, added string) error {
	var err error
	if prev == "" {
		err = removeIfExists(filepath.Join(shimDir, currentLink))
	} else {
		err = switchLink(shimDir, prev)
	}
	if err != nil {
		return err
	}
	if added != "" && added != prev {
		return os.RemoveAll(filepath.Join(shimDir, added))
	}
	return nil
}

// switchLink points shimDir/current at version atomically (a new link
// renamed over the old one) and syncs the directory.
func switchLink(shimDir, version string) error {
	tmp := filepath.Join(shimDir, ".current.new")
	_ = os.Remove(tmp)
	if err := os.Symlink(version, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(shimDir, currentLink)); err != nil {
		return err
	}
	return syncPath(shimDir)
}

// pruneVersions removes every version directory of a Shim but keep, and
// staging left-overs.
func pruneVersions(shimDir, keep string) error {
	entries, err := os.ReadDir(shimDir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if e.Name() == keep || e.Name() == currentLink || !e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			continue
		}
		errs = append(errs, os.RemoveAll(filepath.Join(shimDir, e.Name())))
	}
	return errors.Join(errs...)
}

// bundleStore is the bundle role: the Shims' bundle directories under the
// bundle root.
type bundleStore struct{ i *Installer }

// remove removes a Shim's bundle directory with every version, and the
// bundle root when nothing else is left in it.
func (b bundleStore) remove(shimDir string) error {
	i := b.i
	if shimDir == "" || path.Dir(shimDir) != i.paths().bundleRoot() {
		return nil // never outside the bundle root
	}
	if err := os.RemoveAll(i.paths().local(shimDir)); err != nil {
		return err
	}
	_ = os.Remove(i.paths().local(i.paths().bundleRoot())) // only when empty
	return nil
}

// sweepStaging removes the staging directories of runs that died (the
// caller holds the node lock, so no run is using one), and the Shim and
// bundle root directories they leave empty.
func (b bundleStore) sweepStaging() error {
	i := b.i
	root := i.paths().local(i.paths().bundleRoot())
	dirs, err := filepath.Glob(filepath.Join(root, "*", ".staging-*"))
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range dirs {
		errs = append(errs, os.RemoveAll(d))
		_ = os.Remove(filepath.Dir(d)) // only when empty
	}
	if len(dirs) > 0 {
		_ = os.Remove(root)
	}
	return errors.Join(errs...)
}

func removeIfExists(p string) error {
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
