package installer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"

	"github.com/opencontainers/go-digest"

	"github.com/shimkit/shimkit/installer/plan"
)

// Drift is how a node differs from what an install recorded, one
// human-readable entry per mismatch. Verify reports it; Install compares
// the same way and lays the bundle out again when its part drifted. Each
// comparison only reads the node.

// driftNotInstalled is the drift of a Shim the node has no record of.
const driftNotInstalled = "not installed"

// repairSuffix names the directory a bundle is laid out in again when its
// version directory drifted: the drifted one stays in use until the
// "current" link is switched, as for an upgrade.
const repairSuffix = "-repair"

// sameVersion reports whether the installed version directory holds the
// bundle version (laid out the first time or again).
func sameVersion(installed, version string) bool {
	return installed != "" && (installed == version || installed == version+repairSuffix)
}

// repairedVersion names the directory a drifted bundle of version is laid
// out in again: not the one in use (installed).
func repairedVersion(installed, version string) string {
	if installed == version {
		return version + repairSuffix
	}
	return version
}

// bundleDrift compares the Shim's bundle with its record: each file is
// there, a regular file, of the recorded digest (records that have one)
// and of the mode files gives it (when given: the plan's files of the
// installed layout); the "current" link points at the recorded version;
// the PATH links point into the bundle.
func (b bundleStore) drift(rec ShimState, files []plan.File) ([]string, error) {
	i := b.i
	modes := map[string]uint32{}
	for _, f := range files {
		modes[path.Join(rec.BundleDir, rec.Version, f.Path)] = f.Mode
	}
	var out []string
	for _, f := range slices.Concat(rec.Files, rec.Binaries) {
		mode, hasMode := modes[f]
		d, err := fileDrift(i.paths().local(f), f, rec.FileDigests[f], mode, hasMode)
		if err != nil {
			return out, err
		}
		if d != "" {
			out = append(out, d)
		}
	}
	if rec.BundleDir != "" && rec.Version != "" {
		link := path.Join(rec.BundleDir, currentLink)
		switch cur, err := readLink(i.paths().local(link)); {
		case err != nil:
			return out, fmt.Errorf("link %s: %w", link, err)
		case cur == "":
			out = append(out, "link "+link+" is missing")
		case cur != rec.Version:
			out = append(out, fmt.Sprintf("link %s points to %s, the installed version is %s", link, cur, rec.Version))
		}
	}
	for _, l := range rec.Links {
		switch cur, err := readLink(i.paths().local(l)); {
		case err != nil:
			return out, fmt.Errorf("link %s: %w", l, err)
		case cur == "":
			out = append(out, "link "+l+" is missing")
		case !strings.HasPrefix(cur, rec.BundleDir+"/"):
			out = append(out, fmt.Sprintf("link %s points to %s, not into the Shim's bundle %s", l, cur, rec.BundleDir))
		}
	}
	return out, nil
}

// fileDrift compares one file of the bundle (local, at node path name)
// with the digest recorded for it ("": none recorded) and, when hasMode,
// with its mode; it returns "" when the file is as installed.
func fileDrift(local, name, digest string, mode uint32, hasMode bool) (string, error) {
	fi, err := os.Lstat(local)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return "file " + name + " is missing", nil
	case err != nil:
		return "", fmt.Errorf("file %s: %w", name, err)
	case !fi.Mode().IsRegular():
		return fmt.Sprintf("file %s is no longer a regular file (%s)", name, fi.Mode().Type()), nil
	}
	if digest != "" {
		got, err := fileDigest(local)
		if err != nil {
			return "", fmt.Errorf("file %s: %w", name, err)
		}
		if got != digest {
			return fmt.Sprintf("file %s was changed (%s recorded, %s found)", name, digest, got), nil
		}
	}
	if hasMode && fi.Mode().Perm() != fs.FileMode(mode) {
		return fmt.Sprintf("file %s has mode %s, the plan's is %s", name, plan.FormatMode(uint32(fi.Mode().Perm())), plan.FormatMode(mode)), nil
	}
	return "", nil
}

// readLink returns where a symlink points, "" when there is none (no
// file, or a file that is not a link).
func readLink(local string) (string, error) {
	cur, err := os.Readlink(local)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.EINVAL), errors.Is(err, syscall.ENOTDIR):
		return "", nil
	case err != nil:
		return "", err
	}
	return cur, nil
}

// handlerDrift lists the record's handlers that the runtime's config (the
// file shimkit edits for each) no longer defines.
func handlerDrift(rt Runtime, rec ShimState) ([]string, error) {
	f, ok := unwrap(rt).(handlerFinder)
	if !ok {
		return nil, nil
	}
	var out []string
	for _, h := range rec.handlers() {
		has, err := f.HasHandler(h)
		if err != nil {
			return out, fmt.Errorf("handler %s: %w", h, err)
		}
		if !has {
			out = append(out, "handler "+h+" is not in "+runtimeName(rt)+"'s config")
		}
	}
	return out, nil
}

// unitDrift lists the record's unit files that are missing or no longer
// hold what shimkit wrote.
func (u sandboxUnits) drift(rec ShimState) ([]string, error) {
	i := u.i
	var out []string
	for _, u := range rec.Units {
		data, err := os.ReadFile(i.paths().local(u))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			out = append(out, "unit "+u+" is missing")
		case err != nil:
			return out, fmt.Errorf("unit %s: %w", u, err)
		case rec.Written[u] != "" && digestOf(data) != rec.Written[u]:
			out = append(out, "unit "+u+" was changed after shimkit wrote it")
		}
	}
	return out, nil
}

// driftCheck is the drift role: how the node differs from a Shim's
// record. Each comparison only reads the node.
type driftCheck struct{ i *Installer }

// recorded compares the node with a Shim's record (node) on the runtime
// the record names, or kind when given (a plan's, with its restart
// settings r).
func (d driftCheck) recorded(rec ShimState, kind string, r plan.Restart, files []plan.File) ([]string, error) {
	if kind == "" {
		kind = orDefault(rec.Runtime, plan.RuntimeContainerd)
	}
	rt, err := d.i.runtimeFor(kind, r)
	if err != nil {
		return nil, err
	}
	return d.node(rt, rec, files)
}

// node compares the node with a Shim's record: its bundle (files of the
// plan's layout, or nil), handlers and units. What cannot be read (a
// config that does not parse) is the error, returned with the drift
// found before it.
func (d driftCheck) node(rt Runtime, rec ShimState, files []plan.File) ([]string, error) {
	out, err := bundleStore{d.i}.drift(rec, files)
	if err != nil {
		return out, err
	}
	rest, err := d.setup(rt, rec)
	return append(out, rest...), err
}

// setup compares what of a Shim's record lies outside its bundle: its
// handlers in the runtime's config, then its units.
func (d driftCheck) setup(rt Runtime, rec ShimState) ([]string, error) {
	out, err := handlerDrift(rt, rec)
	if err != nil {
		return out, err
	}
	units, err := sandboxUnits{d.i}.drift(rec)
	return append(out, units...), err
}

// runtimeName names a runtime in messages.
func runtimeName(rt Runtime) string {
	if _, ok := unwrap(rt).(*crioRuntime); ok {
		return "CRI-O"
	}
	return "containerd"
}

// fileDigest is digestOf a file's content, read as a stream.
func fileDigest(local string) (string, error) {
	f, err := os.Open(local)
	if err != nil {
		return "", err
	}
	defer f.Close()
	d, err := digest.SHA256.FromReader(f)
	return d.String(), err
}
