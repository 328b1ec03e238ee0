package installer

import (
	"path"
	"path/filepath"
)

// layout is where an Installer's files are on the node, and where node
// paths are on this machine: the paths role, resolved from the
// Installer's fields with their defaults.
type layout struct {
	host, bundles, links, state, units string
}

// paths returns the Installer's layout.
func (i *Installer) paths() layout {
	return layout{host: i.HostRoot, bundles: i.BundleRoot, links: i.LinkDir, state: i.StateDir, units: i.UnitDir}
}

// local is where a node path is on this machine.
func (l layout) local(nodePath string) string {
	return filepath.Join(l.root(), filepath.FromSlash(nodePath))
}

// nodePath is the node's path of a local one (local's inverse).
func (l layout) nodePath(local string) string {
	rel, err := filepath.Rel(l.root(), local)
	if err != nil {
		return local
	}
	return "/" + filepath.ToSlash(rel)
}

func (l layout) root() string       { return orDefault(l.host, "/") }
func (l layout) bundleRoot() string { return orDefault(l.bundles, DefaultBundleRoot) }
func (l layout) stateDir() string   { return orDefault(l.state, DefaultStateDir) }
func (l layout) unitDir() string    { return orDefault(l.units, DefaultUnitDir) }

// linkDir is where PATH links go; "" for none.
func (l layout) linkDir() string {
	if l.links == "-" {
		return ""
	}
	return orDefault(l.links, DefaultLinkDir)
}

// bundleDir is a Shim's directory; currentDir what BundleDirPlaceholder
// stands for.
func (l layout) bundleDir(shim string) string  { return path.Join(l.bundleRoot(), shim) }
func (l layout) currentDir(shim string) string { return path.Join(l.bundleDir(shim), currentLink) }

// statePath and lockPath are the state file and the node lock, local.
func (l layout) statePath() string { return l.local(filepath.Join(l.stateDir(), "state.json")) }
func (l layout) lockPath() string  { return l.local(filepath.Join(l.stateDir(), "lock")) }

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
