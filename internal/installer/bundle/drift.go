package bundle

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/installer/layout"
	"github.com/shimkit/shimkit/internal/installer/ownership"
)

// Record is what a Shim's record says of its bundle: node paths.
type Record struct {
	// Dir is the Shim's bundle directory; Version the directory under it
	// that "current" points to.
	Dir, Version string
	// Files are the bundle's files (and the binaries of records before
	// bundles); Digests the digest recorded of each (none: only checked to
	// exist).
	Files   []string
	Digests map[string]string
	// Links are the PATH links into the bundle.
	Links []string
}

// Drift compares the Shim's bundle with its record: each file is there, a
// regular file, of the recorded digest (records that have one) and of the
// mode files gives it (when given: the plan's files of the installed
// layout); the "current" link points at the recorded version; the PATH
// links point into the bundle. What cannot be read is the error, with the
// drift found before it.
func Drift(l layout.Layout, rec Record, files []plan.File) ([]string, error) {
	var out []string
	for _, f := range rec.Files {
		mode, hasMode := modeOf(files, path.Join(rec.Dir, rec.Version), f)
		d, err := fileDrift(l.Local(f), f, rec.Digests[f], mode, hasMode)
		if err != nil {
			return out, err
		}
		if d != "" {
			out = append(out, d)
		}
	}
	if rec.Dir != "" && rec.Version != "" {
		link := path.Join(rec.Dir, layout.CurrentLink)
		switch cur, err := readLink(l.Local(link)); {
		case err != nil:
			return out, fmt.Errorf("link %s: %w", link, err)
		case cur == "":
			out = append(out, "link "+link+" is missing")
		case cur != rec.Version:
			out = append(out, fmt.Sprintf("link %s points to %s, the installed version is %s", link, cur, rec.Version))
		}
	}
	for _, lk := range rec.Links {
		switch cur, err := readLink(l.Local(lk)); {
		case err != nil:
			return out, fmt.Errorf("link %s: %w", lk, err)
		case cur == "":
			out = append(out, "link "+lk+" is missing")
		case !strings.HasPrefix(cur, rec.Dir+"/"):
			out = append(out, fmt.Sprintf("link %s points to %s, not into the Shim's bundle %s", lk, cur, rec.Dir))
		}
	}
	return out, nil
}

// modeOf returns the mode the plan's files give the bundle file at node
// path name, laid out in dir: its own, or its directory's.
func modeOf(files []plan.File, dir, name string) (uint32, bool) {
	for _, f := range files {
		p := path.Join(dir, f.Path)
		if p == name || f.IsDir() && strings.HasPrefix(name, p+"/") {
			return f.Mode, true
		}
	}
	return 0, false
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
		got, err := ownership.FileDigest(local)
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
