package layout

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

// ErrReadOnlyHost: a directory the install must write is on a read-only
// filesystem (an immutable OS, a read-only /opt or /usr), or the bundle
// root, whose binaries containerd runs, is on one mounted noexec (COS
// mounts some writable directories so). Nothing on the node changed; the
// node needs its runtime baked into its image, or other directories
// (BundleRoot, LinkDir).
var ErrReadOnlyHost = errors.New("read-only host")

// Target is a node directory an install writes, and what it is; Exec:
// containerd runs binaries from it, so its filesystem must not be mounted
// noexec.
type Target struct {
	What, Path string
	Exec       bool
}

// Targets are the node directories of the layout an install writes, after
// the runtime's (config): the bundle root (executable), the state
// directory, the PATH link directory unless there is none, and the unit
// directory when units. Only the bundle root must be executable: the link
// directory holds symlinks, and the kernel checks noexec on the mount of
// the file a symlink resolves to (the bundle's), not on the link's.
func (l Layout) Targets(config []Target, units bool) []Target {
	ts := append(slices.Clone(config), Target{What: "the bundle root", Path: l.BundleRoot(), Exec: true},
		Target{What: "the state directory", Path: l.StateDir()})
	if d := l.LinkDir(); d != "" {
		ts = append(ts, Target{What: "the link directory", Path: d})
	}
	if units {
		ts = append(ts, Target{What: "the unit directory", Path: l.UnitDir()})
	}
	return ts
}

// CheckWritable finds, before anything on the node changes (the node lock
// included), a target directory on a read-only filesystem, or an exec
// target on one mounted noexec: the directory, or its nearest existing
// parent when it does not exist yet. The error wraps ErrReadOnlyHost and
// names the directory.
func (l Layout) CheckWritable(ts []Target) error {
	var errs []error
	for _, t := range ts {
		flags, at, err := mountFlags(l.Local(t.Path))
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s %s: %w", t.What, t.Path, err))
		case flags&unix.ST_RDONLY != 0:
			errs = append(errs, fmt.Errorf("%w: %s %s is on a read-only filesystem (at %s)", ErrReadOnlyHost, t.What, t.Path, l.NodePath(at)))
		case t.Exec && flags&unix.ST_NOEXEC != 0:
			errs = append(errs, fmt.Errorf("%w: %s %s is on a filesystem mounted noexec (at %s): containerd could not run the shims there", ErrReadOnlyHost, t.What, t.Path, l.NodePath(at)))
		}
	}
	return errors.Join(errs...)
}

// mountFlags returns the mount flags (unix.ST_RDONLY, unix.ST_NOEXEC, ...)
// of the filesystem of path, or of its nearest existing parent (at).
func mountFlags(path string) (flags int64, at string, _ error) {
	at = filepath.Clean(path)
	for {
		if _, err := os.Lstat(at); err == nil || !errors.Is(err, os.ErrNotExist) {
			break
		}
		parent := filepath.Dir(at)
		if parent == at {
			break
		}
		at = parent
	}
	var st unix.Statfs_t
	if err := unix.Statfs(at, &st); err != nil {
		return 0, at, err
	}
	return st.Flags, at, nil
}
