package installer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/shimkit/shimkit/crioconfig"
	"github.com/shimkit/shimkit/installer/plan"
)

// ErrReadOnlyHost: a directory the install must write is on a read-only
// filesystem (an immutable OS, a read-only /opt or /usr), or the bundle
// root, whose binaries containerd runs, is on one mounted noexec (COS
// mounts some writable directories so). Nothing on the node changed; the
// node needs its runtime baked into its image, or other directories
// (BundleRoot, LinkDir).
var ErrReadOnlyHost = errors.New("read-only host")

// writeTarget is a node directory an install writes, and what it is;
// exec: containerd runs binaries from it, so its filesystem must not be
// mounted noexec.
type writeTarget struct {
	what, path string
	exec       bool
}

// hostCheck is the read-only host role: the directories an install
// writes, checked before anything changes.
type hostCheck struct{ i *Installer }

// writeTargets are the node directories an install of plans writes:
// the runtime's config directory (containerd's preset's, CRI-O's drop-in
// and state directories), the bundle root, the
// state directory, the PATH link directory unless there is none, and the
// unit directory when a plan has sandboxer units. Only the bundle root
// must be executable: the link directory holds symlinks, and the kernel
// checks noexec on the mount of the file a symlink resolves to (the
// bundle's), not on the link's.
func (h hostCheck) writeTargets(rt *nodeRuntime, plans []*plan.NodePlan) []writeTarget {
	i := h.i
	var ts []writeTarget
	switch rt.kind {
	case plan.RuntimeContainerd:
		ts = append(ts, writeTarget{what: "containerd's config directory", path: filepath.Dir(rt.target.Preset.Config)})
	case plan.RuntimeCRIO:
		ts = append(ts, writeTarget{what: "CRI-O's drop-in directory", path: crioDropInDir(rt.crio)},
			writeTarget{what: "shimkit's CRI-O state directory", path: crioStateDir(rt.crio)})
	}
	ts = append(ts, writeTarget{what: "the bundle root", path: i.paths().bundleRoot(), exec: true},
		writeTarget{what: "the state directory", path: i.paths().stateDir()})
	if d := i.paths().linkDir(); d != "" {
		ts = append(ts, writeTarget{what: "the link directory", path: d})
	}
	for _, p := range plans {
		if len(p.Sandboxers) > 0 {
			ts = append(ts, writeTarget{what: "the unit directory", path: i.paths().unitDir()})
			break
		}
	}
	return ts
}

// checkWritable finds, before anything on the node changes (the node lock
// included), a target directory on a read-only filesystem, or an exec
// target on one mounted noexec: the directory, or its nearest existing
// parent when it does not exist yet. The error wraps ErrReadOnlyHost and
// names the directory.
func (h hostCheck) checkWritable(ts []writeTarget) error {
	i := h.i
	var errs []error
	for _, t := range ts {
		flags, at, err := mountFlags(i.paths().local(t.path))
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s %s: %w", t.what, t.path, err))
		case flags&unix.ST_RDONLY != 0:
			errs = append(errs, fmt.Errorf("%w: %s %s is on a read-only filesystem (at %s)", ErrReadOnlyHost, t.what, t.path, i.paths().nodePath(at)))
		case t.exec && flags&unix.ST_NOEXEC != 0:
			errs = append(errs, fmt.Errorf("%w: %s %s is on a filesystem mounted noexec (at %s): containerd could not run the shims there", ErrReadOnlyHost, t.what, t.path, i.paths().nodePath(at)))
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

// crioDropInDir and crioStateDir are a CRI-O target's directories.
func crioDropInDir(t crioconfig.Target) string {
	return orDefault(t.DropInDir, crioconfig.DefaultDropInDir)
}

func crioStateDir(t crioconfig.Target) string {
	return orDefault(t.StateDir, crioconfig.DefaultStateDir)
}
