package bundle

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/shimkit/shimkit/internal/installer/layout"
)

// Current returns the version the Shim's "current" link names ("" when
// there is none); shimDir is local.
func Current(shimDir string) string {
	cur, _ := os.Readlink(filepath.Join(shimDir, layout.CurrentLink))
	return cur
}

// Restore points "current" back at prev (or removes it when there was
// none) and removes the version the operation added; shimDir is local.
func Restore(shimDir, prev, added string) error {
	var err error
	if prev == "" {
		err = removeIfExists(filepath.Join(shimDir, layout.CurrentLink))
	} else {
		err = Switch(shimDir, prev)
	}
	if err != nil {
		return err
	}
	if added != "" && added != prev {
		return os.RemoveAll(filepath.Join(shimDir, added))
	}
	return nil
}

// Switch points shimDir/current at version atomically (a new link
// renamed over the old one) and syncs the directory.
func Switch(shimDir, version string) error {
	tmp := filepath.Join(shimDir, ".current.new")
	_ = os.Remove(tmp)
	if err := os.Symlink(version, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(shimDir, layout.CurrentLink)); err != nil {
		return err
	}
	return syncPath(shimDir)
}

// Prune removes every version directory of a Shim but those of keep, and
// staging left-overs; shimDir is local.
func Prune(shimDir string, keep ...string) error {
	entries, err := os.ReadDir(shimDir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if slices.Contains(keep, e.Name()) || e.Name() == layout.CurrentLink || !e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			continue
		}
		errs = append(errs, os.RemoveAll(filepath.Join(shimDir, e.Name())))
	}
	return errors.Join(errs...)
}

// Remove removes a Shim's bundle directory (a node path) with every
// version, and the bundle root when nothing else is left in it.
func Remove(l layout.Layout, shimDir string) error {
	if shimDir == "" || path.Dir(shimDir) != l.BundleRoot() {
		return nil // never outside the bundle root
	}
	if err := os.RemoveAll(l.Local(shimDir)); err != nil {
		return err
	}
	_ = os.Remove(l.Local(l.BundleRoot())) // only when empty
	return nil
}

// SweepStaging removes the staging directories of runs that died (the
// caller holds the node lock, so no run is using one), and the Shim and
// bundle root directories they leave empty.
func SweepStaging(l layout.Layout) error {
	root := l.Local(l.BundleRoot())
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

// syncPath fsyncs a file or a directory.
func syncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

func removeIfExists(p string) error {
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// Commit makes an install's bundle final: the PATH links of the record
// before (prev) that the new one (rec) no longer has are removed when
// they still point into prev's bundle, and every version of the Shim but
// rec's and keep (earlier versions a running sandbox may use) is pruned.
// The error is the prune's.
func Commit(l layout.Layout, rec, prev Record, keep []string) error {
	for _, lk := range prev.Links {
		if !slices.Contains(rec.Links, lk) {
			_ = UnlinkUnder(l.Local(lk), prev.Dir)
		}
	}
	return Prune(l.Local(rec.Dir), append([]string{rec.Version}, keep...)...)
}

// RemoveAll removes a Shim's files for good: its PATH links that point
// into its bundle (or, for a record before bundles, at one of its
// binaries), those binaries, and its bundle directory.
func RemoveAll(l layout.Layout, rec Record, binaries []string) error {
	var errs []error
	for _, lk := range rec.Links {
		errs = append(errs, UnlinkUnder(l.Local(lk), rec.Dir))
		for _, b := range binaries {
			errs = append(errs, UnlinkOurs(l.Local(lk), b))
		}
	}
	for _, b := range binaries {
		errs = append(errs, removeIfExists(l.Local(b)))
	}
	return errors.Join(append(errs, Remove(l, rec.Dir))...)
}
