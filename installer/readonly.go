package installer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/installer/plan"
)

// ErrReadOnlyHost: a directory the install must write is on a read-only
// filesystem (an immutable OS, a read-only /opt or /usr). Nothing on the
// node changed; the node needs its runtime baked into its image, or other
// directories (BundleRoot, LinkDir).
var ErrReadOnlyHost = errors.New("read-only host")

// writeTarget is a node directory an install writes, and what it is.
type writeTarget struct{ what, path string }

// writeTargets are the node directories an install of plans writes:
// containerd's config directory (the preset's), the bundle root, the
// state directory, the PATH link directory unless there is none, and the
// unit directory when a plan has sandboxer units.
func (i *Installer) writeTargets(t containerdconfig.Target, plans []*plan.NodePlan) []writeTarget {
	ts := []writeTarget{
		{"containerd's config directory", filepath.Dir(t.Preset.Config)},
		{"the bundle root", i.bundleRoot()},
		{"the state directory", i.stateDir()},
	}
	if d := i.linkDir(); d != "" {
		ts = append(ts, writeTarget{"the link directory", d})
	}
	for _, p := range plans {
		if len(p.Sandboxers) > 0 {
			ts = append(ts, writeTarget{"the unit directory", i.unitDir()})
			break
		}
	}
	return ts
}

// checkWritable finds, before anything on the node changes (the node lock
// included), a target directory on a read-only filesystem: the directory,
// or its nearest existing parent when it does not exist yet. The error
// wraps ErrReadOnlyHost and names the directory.
func (i *Installer) checkWritable(ts []writeTarget) error {
	var errs []error
	for _, t := range ts {
		ro, at, err := readOnly(i.local(t.path))
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s %s: %w", t.what, t.path, err))
		case ro:
			errs = append(errs, fmt.Errorf("%w: %s %s is on a read-only filesystem (at %s)", ErrReadOnlyHost, t.what, t.path, i.nodePath(at)))
		}
	}
	return errors.Join(errs...)
}

// nodePath is the node's path of a local one (local's inverse).
func (i *Installer) nodePath(local string) string {
	rel, err := filepath.Rel(i.root(), local)
	if err != nil {
		return local
	}
	return "/" + filepath.ToSlash(rel)
}

// readOnly reports whether path, or its nearest existing parent (at), is
// on a filesystem mounted read-only.
func readOnly(path string) (ro bool, at string, _ error) {
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
		return false, at, err
	}
	return st.Flags&unix.ST_RDONLY != 0, at, nil
}
