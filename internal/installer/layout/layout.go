package layout

import (
	"cmp"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// Defaults of an installer, as node paths.
const (
	DefaultBundleRoot = "/opt/shimkit"
	DefaultLinkDir    = "/usr/local/bin"
	DefaultStateDir   = "/var/lib/shimkit"
	DefaultUnitDir    = "/etc/systemd/system"
)

// CurrentLink is the symlink in a Shim's bundle directory that names the
// installed version; the bundle placeholder resolves to it, so the config
// need not change when only the bundle does.
const CurrentLink = "current"

// Layout is where an installer's files are on the node, and where node
// paths are on this machine: each field a node path ("" for the default;
// Host "" for "/").
type Layout struct {
	Host, Bundles, Links, State, Units string
}

// Local is where a node path is on this machine.
func (l Layout) Local(nodePath string) string {
	return filepath.Join(l.Root(), filepath.FromSlash(nodePath))
}

// NodePath is the node's path of a local one (Local's inverse).
func (l Layout) NodePath(local string) string {
	rel, err := filepath.Rel(l.Root(), local)
	if err != nil {
		return local
	}
	return "/" + filepath.ToSlash(rel)
}

// Root is where the node's / is on this machine.
func (l Layout) Root() string { return cmp.Or(l.Host, "/") }

// BundleRoot holds one directory per Shim.
func (l Layout) BundleRoot() string { return cmp.Or(l.Bundles, DefaultBundleRoot) }

// StateDir holds the state file, the node lock and the artifact cache.
func (l Layout) StateDir() string { return cmp.Or(l.State, DefaultStateDir) }

// UnitDir is where sandboxer units go.
func (l Layout) UnitDir() string { return cmp.Or(l.Units, DefaultUnitDir) }

// LinkDir is where PATH links go; "" for none.
func (l Layout) LinkDir() string {
	if l.Links == "-" {
		return ""
	}
	return cmp.Or(l.Links, DefaultLinkDir)
}

// BundleDir is a Shim's directory.
func (l Layout) BundleDir(shim string) string { return path.Join(l.BundleRoot(), shim) }

// CurrentDir is what the bundle placeholder stands for: the Shim's
// installed version, through CurrentLink.
func (l Layout) CurrentDir(shim string) string { return path.Join(l.BundleDir(shim), CurrentLink) }

// StatePath is the state file, local.
func (l Layout) StatePath() string { return l.Local(filepath.Join(l.StateDir(), "state.json")) }

// CachePath is the artifact cache (fetch.Cache), local.
func (l Layout) CachePath() string { return l.Local(filepath.Join(l.StateDir(), "cache")) }

// LockPath is the node lock, local.
func (l Layout) LockPath() string { return l.Local(filepath.Join(l.StateDir(), "lock")) }

// Exists reports whether a node path exists.
func (l Layout) Exists(nodePath string) (bool, error) {
	_, err := os.Stat(l.Local(nodePath))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}
