package bundle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/shimkit/shimkit/fetch"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/installer/layout"
	"github.com/shimkit/shimkit/internal/installer/ownership"
)

// ErrMissingFile: the artifact lacks a file the plan names, or a pattern
// matches several.
var ErrMissingFile = errors.New("artifact does not hold the bundle file")

// repairSuffix names the directory a bundle is laid out in again when its
// version directory drifted: the drifted one stays in use until the
// "current" link is switched, as for an upgrade.
const repairSuffix = "-repair"

// Staging is the bundle state of an operation: the staging directory
// (local; "" when none was made) and the version prepared in it ("" when
// the installed one is kept); SwitchedAt when the operation switched
// "current" to its version (zero: it did not).
type Staging struct {
	Dir, Version string
	SwitchedAt   time.Time
}

// Laid is the bundle Stage laid out, as the Shim's record keeps it.
type Laid struct {
	Digest, Version string
	// Files are node paths under the version directory; FileDigests the
	// digest of each as laid out.
	Files       []string
	FileDigests map[string]string
}

// FetchFunc fetches the artifact into dir.
type FetchFunc func(ctx context.Context, dir string) (*fetch.Result, error)

// Stage fetches the artifact into a new staging directory in the Shim's
// bundle directory (the same filesystem, so placing it is a rename) and
// lays the plan's files out there, with their modes, placeholders
// substituted. installed is the version directory the Shim uses ("" none);
// when the artifact is that version's, the bundle stays when intact, else
// is laid out again beside it. s.Dir is set as soon as the directory
// exists, also when Stage fails (Unstage removes it).
func (s *Staging) Stage(ctx context.Context, l layout.Layout, shim string, files []plan.File, get FetchFunc, installed string, intact func() bool) (Laid, error) {
	shimDir := l.BundleDir(shim)
	local := l.Local(shimDir)
	if err := os.MkdirAll(local, 0o755); err != nil {
		return Laid{}, err
	}
	staging, err := os.MkdirTemp(local, ".staging-")
	if err != nil {
		return Laid{}, err
	}
	s.Dir = staging
	art := filepath.Join(staging, "artifact")
	if err := os.Mkdir(art, 0o700); err != nil {
		return Laid{}, err
	}
	fr, err := get(ctx, art)
	if err != nil {
		return Laid{}, err
	}
	out := Laid{Digest: fr.Digest.String()}
	version := Version(out.Digest, files)
	if SameVersion(installed, version) && dirExists(l.Local(path.Join(shimDir, installed))) {
		// The bundle was laid out before: when as installed, it stays;
		// when it drifted, it is laid out again beside it, and "current"
		// switches as for an upgrade (running shims keep their files).
		if intact() {
			version = installed
		} else {
			version = repairedVersion(installed, version)
		}
	}
	out.Files, out.FileDigests, err = lay(fr, art, filepath.Join(staging, version), files, path.Join(shimDir, version), l.CurrentDir(shim))
	if err != nil {
		return out, err
	}
	out.Version = version
	if version != installed || !dirExists(l.Local(path.Join(shimDir, version))) {
		s.Version = version
	}
	return out, nil
}

// lay lays the plan's files out from the artifact fetched into art in
// the bundle directory dir, whose node path is node; current is what the
// placeholder resolves to. It returns the files' node paths and digests.
func lay(fr *fetch.Result, art, dir string, files []plan.File, node, current string) ([]string, map[string]string, error) {
	var paths []string
	digests := map[string]string{}
	for _, file := range files {
		placed, err := sources(fr.Files, file)
		if err != nil {
			return nil, nil, fmt.Errorf("artifact %s: %w", fr.Digest, err)
		}
		for _, pl := range placed {
			var digest string
			dst := filepath.Join(dir, filepath.FromSlash(pl.path))
			if file.Content != nil {
				digest, err = writeFile(dst, []byte(*file.Content), file, current)
			} else {
				digest, err = layFile(filepath.Join(art, filepath.FromSlash(pl.src)), dst, file, current)
			}
			if err != nil {
				return nil, nil, fmt.Errorf("bundle file %s: %w", pl.path, err)
			}
			p := path.Join(node, pl.path)
			paths = append(paths, p)
			digests[p] = digest
		}
	}
	return paths, digests, nil
}

// placement is one file to lay out: its path in the artifact ("" for
// content) and in the bundle.
type placement struct{ src, path string }

// sources lists what a plan file lays out: the one file it names or
// matches, every file under a directory, or the file it holds.
func sources(files []string, f plan.File) ([]placement, error) {
	switch {
	case f.Content != nil:
		return []placement{{path: f.Path}}, nil
	case f.IsDir():
		var out []placement
		for _, name := range files {
			if rest, ok := strings.CutPrefix(name, f.Source); ok {
				out = append(out, placement{src: name, path: f.Path + rest})
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("%w: no file under %q (the artifact has %v)", ErrMissingFile, f.Source, files)
		}
		return out, nil
	}
	src, err := matchFile(files, f)
	if err != nil {
		return nil, err
	}
	return []placement{{src: src, path: f.Path}}, nil
}

// Unstage removes the staging directory, and the Shim's and the bundle
// root's directories a first install created (only when empty).
func (s Staging) Unstage(l layout.Layout, shimDir string) error {
	if s.Dir == "" {
		return nil
	}
	err := os.RemoveAll(s.Dir)
	_ = os.Remove(l.Local(shimDir))
	_ = os.Remove(l.Local(l.BundleRoot()))
	return err
}

// Locate returns where a node path is on this machine: a file under
// current (the Shim's "current" link) is in staging while a new version
// is prepared there.
func (s Staging) Locate(l layout.Layout, current, nodePath string) string {
	if rest, ok := strings.CutPrefix(nodePath, current+"/"); ok && s.Version != "" {
		return filepath.Join(s.Dir, s.Version, filepath.FromSlash(rest))
	}
	return l.Local(nodePath)
}

// Place moves the staged version (when there is one) into shimDir
// (local), replacing a leftover of a run that died, and switches
// "current" to version with one rename; nothing when "current" names it
// already and nothing was staged. journal is called first, with the
// version "current" names ("" none). switched reports whether the link
// may have changed: Restore undoes it.
func (s Staging) Place(shimDir, version string, journal func(prev string) error) (switched bool, err error) {
	prev := Current(shimDir)
	if prev == version && s.Version == "" {
		return false, nil
	}
	if err := journal(prev); err != nil {
		return false, err
	}
	if s.Version != "" {
		dst := filepath.Join(shimDir, s.Version)
		if err := os.RemoveAll(dst); err != nil {
			return false, err
		}
		if err := os.Rename(filepath.Join(s.Dir, s.Version), dst); err != nil {
			return false, err
		}
	}
	return true, Switch(shimDir, version)
}

// Version names a bundle version: the artifact and how it is laid out.
func Version(digest string, files []plan.File) string {
	data, _ := json.Marshal(struct {
		D string
		F []plan.File
	}{digest, files})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:16]
}

// SameVersion reports whether the installed version directory holds the
// bundle version (laid out the first time or again).
func SameVersion(installed, version string) bool {
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

// matchFile finds the artifact file a plan file names: an exact path, or
// a pattern matching exactly one file (base names, for a pattern without a
// slash); among several matches, the one named like the target wins.
func matchFile(files []string, f plan.File) (string, error) {
	var matches []string
	for _, name := range files {
		subject := name
		if !strings.Contains(f.Source, "/") {
			subject = path.Base(name)
		}
		if ok, _ := path.Match(f.Source, subject); ok {
			matches = append(matches, name)
		}
	}
	switch {
	case len(matches) == 1:
		return matches[0], nil
	case len(matches) == 0:
		return "", fmt.Errorf("%w: no file matches %q (the artifact has %v)", ErrMissingFile, f.Source, files)
	}
	for _, m := range matches {
		if path.Base(m) == path.Base(f.Path) {
			return m, nil
		}
	}
	return "", fmt.Errorf("%w: %q matches several files %v", ErrMissingFile, f.Source, matches)
}

// layFile moves src to dst with the plan's mode, substituting the bundle
// placeholder when asked, and syncs it. It returns the digest of what dst
// holds.
func layFile(src, dst string, f plan.File, current string) (string, error) {
	fi, err := os.Lstat(src)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%w: not a regular file in the artifact (%s)", ErrMissingFile, fi.Mode().Type())
	}
	if f.Substitute {
		data, err := os.ReadFile(src)
		if err != nil {
			return "", err
		}
		return writeFile(dst, data, f, current)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(src, dst); err != nil {
		return "", err
	}
	digest, err := ownership.FileDigest(dst)
	if err != nil {
		return "", err
	}
	if err := os.Chmod(dst, os.FileMode(f.Mode)); err != nil {
		return "", err
	}
	return digest, syncPath(dst)
}

// writeFile writes data to dst with the plan's mode, substituting the
// bundle placeholder when asked, and syncs it. It returns the digest of
// what dst holds.
func writeFile(dst string, data []byte, f plan.File, current string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}
	if f.Substitute {
		data = []byte(plan.ResolveBundleDir(string(data), current))
	}
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		return "", err
	}
	if err := os.Chmod(dst, os.FileMode(f.Mode)); err != nil {
		return "", err
	}
	return ownership.Digest(data), syncPath(dst)
}
