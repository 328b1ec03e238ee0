package installer

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

	"github.com/shimkit/shimkit/fetch"
	"github.com/shimkit/shimkit/installer/plan"
)

// ErrMissingFile: the artifact lacks a file the plan names, or a pattern
// matches several.
var ErrMissingFile = errors.New("artifact does not hold the bundle file")

// stageBundle fetches and verifies the artifact into a staging directory
// inside the Shim's bundle directory (the same filesystem, so placing it is
// a rename) and lays the bundle out there: the plan's files, with their
// modes, placeholders substituted. Nothing the node uses changes.
type stageBundle struct{}

func (stageBundle) name() string { return "fetched" }

func (stageBundle) do(ctx context.Context, r *run) error {
	i, p := r.i, r.plan
	shimDir := i.paths().bundleDir(p.Shim.Name)
	r.rec.BundleDir = shimDir
	if r.sameBundle() {
		// Same spec and artifact, bundle in place as installed: only the
		// config may have drifted.
		r.rec.Version, r.rec.Files, r.rec.Digest, r.rec.FileDigests = r.prev.Version, r.prev.Files, r.prev.Digest, r.prev.FileDigests
		return nil
	}
	local := i.paths().local(shimDir)
	if err := os.MkdirAll(local, 0o755); err != nil {
		return err
	}
	staging, err := os.MkdirTemp(local, ".staging-")
	if err != nil {
		return err
	}
	r.staging = staging
	art := filepath.Join(staging, "artifact")
	if err := os.Mkdir(art, 0o700); err != nil {
		return err
	}
	f, err := fetcherFor(i, p.Artifact)
	if err != nil {
		return err
	}
	platform := i.Platform
	if platform.IsZero() {
		platform = fetch.HostPlatform()
	}
	fr, err := f.Fetch(ctx, platform, art)
	if err != nil {
		return err
	}
	r.rec.Digest = fr.Digest.String()
	version := versionOf(r.rec.Digest, p.Files)
	if r.had && sameVersion(r.prev.Version, version) && dirExists(i.paths().local(path.Join(shimDir, r.prev.Version))) {
		// The bundle was laid out before: when as installed, it stays;
		// when it drifted, it is laid out again beside it, and "current"
		// switches as for an upgrade (running shims keep their files).
		if r.bundleIntact() {
			version = r.prev.Version
		} else {
			version = repairedVersion(r.prev.Version, version)
		}
	}
	bundle := filepath.Join(staging, version)
	current := i.paths().currentDir(p.Shim.Name)
	r.rec.Files, r.rec.FileDigests = nil, map[string]string{}
	for _, file := range p.Files {
		src, err := matchFile(fr.Files, file)
		if err != nil {
			return fmt.Errorf("artifact %s: %w", r.rec.Digest, err)
		}
		digest, err := layFile(filepath.Join(art, filepath.FromSlash(src)), filepath.Join(bundle, filepath.FromSlash(file.Path)), file, current)
		if err != nil {
			return fmt.Errorf("bundle file %s: %w", file.Path, err)
		}
		node := path.Join(shimDir, version, file.Path)
		r.rec.Files = append(r.rec.Files, node)
		r.rec.FileDigests[node] = digest
	}
	r.rec.Version = version
	if version != r.prev.Version || !dirExists(i.paths().local(path.Join(shimDir, version))) {
		r.stagedVer = version
	}
	return nil
}

func (stageBundle) undo(_ context.Context, r *run) error {
	if r.staging == "" {
		return nil
	}
	err := os.RemoveAll(r.staging)
	// Directories a first install created go too (only when empty).
	_ = os.Remove(r.i.paths().local(r.rec.BundleDir))
	_ = os.Remove(r.i.paths().local(r.i.paths().bundleRoot()))
	return err
}

// versionOf names a bundle version: the artifact and how it is laid out.
func versionOf(digest string, files []plan.File) string {
	data, _ := json.Marshal(struct {
		D string
		F []plan.File
	}{digest, files})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:16]
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
		return "", fmt.Errorf("%w: %s is not a regular file", ErrMissingFile, f.Source)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}
	var digest string
	if f.Substitute {
		data, err := os.ReadFile(src)
		if err != nil {
			return "", err
		}
		data = []byte(plan.ResolveBundleDir(string(data), current))
		if err := os.WriteFile(dst, data, 0o600); err != nil {
			return "", err
		}
		digest = digestOf(data)
	} else if err := os.Rename(src, dst); err != nil {
		return "", err
	} else if digest, err = fileDigest(dst); err != nil {
		return "", err
	}
	if err := os.Chmod(dst, os.FileMode(f.Mode)); err != nil {
		return "", err
	}
	return digest, syncPath(dst)
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// sameBundle reports whether the Shim's bundle stays as it is: installed
// from the same spec and the artifact the plan pins, and as installed.
func (r *run) sameBundle() bool {
	pinned := r.plan.Artifact.Digest
	return r.had && r.prev.SpecHash == r.plan.SpecHash && r.prev.Version != "" &&
		(pinned == "" || pinned == r.prev.Digest) && r.bundleIntact()
}

// bundleIntact reports whether the Shim's bundle is as its record says
// (bundleDrift finds nothing), comparing once per run.
func (r *run) bundleIntact() bool {
	if !r.bundleChecked {
		d, err := bundleStore{r.i}.drift(r.prev, planFiles(r.prev, r.plan))
		if err != nil {
			d = append(d, err.Error()) // what cannot be read is laid out again
		}
		r.bundleDrift, r.bundleChecked = d, true
	}
	return len(r.bundleDrift) == 0
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
