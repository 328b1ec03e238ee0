package fetch

import (
	"archive/tar"
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// extract unpacks a verified blob into dest: a tar archive, plain or
// compressed with gzip, zstd or bzip2, or a bare binary, recognised by
// content. Everything is written into a staging directory inside dest
// through os.Root, and moved into dest only when the whole archive passed
// every check; on any error dest is left as it was.
func extract(blobPath, dest, bareName string, o Options) (files, executables []string, err error) {
	f, err := os.Open(blobPath)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	return extractWith(dest, o, func(x *extractor) error {
		br := bufio.NewReaderSize(f, 64<<10)
		head, _ := br.Peek(512)
		if c := compressionOf(head); c != nil {
			r, done, err := c.open(br)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			defer done()
			if err := x.untar(r); err != nil {
				return fmt.Errorf("%s: %w", c.name, limitOf(err))
			}
			return nil
		}
		if isTar(head) {
			return x.untar(br)
		}
		return x.bare(br, bareName)
	})
}

// extractWith runs fill with an extractor writing into a staging
// directory inside dest, and moves what it wrote into dest only when fill
// and every check passed; on any error dest is left as it was.
func extractWith(dest string, o Options, fill func(x *extractor) error) (files, executables []string, err error) {
	created := false
	if _, err := os.Stat(dest); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dest, 0o755); err != nil {
			return nil, nil, err
		}
		created = true
	}
	staging, err := os.MkdirTemp(dest, ".shimkit-extract-")
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		os.RemoveAll(staging)
		if err != nil && created {
			os.Remove(dest)
		}
	}()
	root, err := os.OpenRoot(staging)
	if err != nil {
		return nil, nil, err
	}
	defer root.Close()

	x := &extractor{root: root, opts: o, limits: o.Limits.withDefaults()}
	if err := fill(x); err != nil {
		return nil, nil, err
	}
	if len(x.executables) == 0 {
		return nil, nil, fmt.Errorf("%w: no regular file matches %q (files: %v)", ErrNoShim, o.executables(), x.files)
	}
	if err := moveInto(staging, dest); err != nil {
		return nil, nil, err
	}
	slices.Sort(x.files)
	slices.Sort(x.executables)
	return x.files, x.executables, nil
}

func isTar(head []byte) bool {
	return len(head) >= 263 && bytes.Equal(head[257:262], []byte("ustar"))
}

type extractor struct {
	root        *os.Root
	opts        Options
	limits      Limits
	entries     int
	total       int64
	files       []string
	executables []string
}

func (x *extractor) bare(r io.Reader, name string) error {
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return fmt.Errorf("%w: a bare binary needs a file name (Options.BinaryName), got %q", ErrNoShim, name)
	}
	return x.writeFile(name, r, -1)
}

func (x *extractor) untar(r io.Reader) error {
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("tar: %w", err)
		}
		x.entries++
		if x.entries > x.limits.MaxEntries {
			return fmt.Errorf("%w: more than %d entries", ErrLimit, x.limits.MaxEntries)
		}
		name, err := safeName(hdr.Name)
		if err != nil {
			return err
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if name == "." {
				continue
			}
			if err := x.root.MkdirAll(name, 0o755); err != nil {
				return fmt.Errorf("%s: %w", hdr.Name, err)
			}
		case tar.TypeReg:
			// Archive modes are not trusted: only shim binaries become
			// executable.
			if err := x.writeFile(name, tr, hdr.Size); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := x.symlink(name, hdr.Linkname); err != nil {
				return err
			}
		case tar.TypeLink:
			target, err := safeName(hdr.Linkname)
			if err != nil {
				return fmt.Errorf("hardlink %s: %w", hdr.Name, err)
			}
			if err := x.mkParent(name); err != nil {
				return err
			}
			if err := x.root.Link(target, name); err != nil {
				return fmt.Errorf("%w: hardlink %s -> %s: %w", ErrUnsafeArchive, hdr.Name, hdr.Linkname, err)
			}
			x.files = append(x.files, name)
		case tar.TypeXGlobalHeader, tar.TypeXHeader:
			continue
		default:
			return fmt.Errorf("%w: %s is a %s, not a file, directory or link", ErrUnsafeArchive, hdr.Name, typeName(hdr.Typeflag))
		}
	}
}

// safeName cleans an archive path and rejects absolute paths and paths
// that leave the root.
func safeName(name string) (string, error) {
	if name == "" || strings.HasPrefix(name, "/") || strings.ContainsRune(name, '\\') || strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("%w: path %q is absolute or malformed", ErrUnsafeArchive, name)
	}
	clean := path.Clean(name)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("%w: path %q leaves the destination", ErrUnsafeArchive, name)
	}
	return clean, nil
}

func (x *extractor) symlink(name, target string) error {
	if target == "" || path.IsAbs(target) {
		return fmt.Errorf("%w: symlink %s -> %s points outside the destination", ErrUnsafeArchive, name, target)
	}
	resolved := path.Clean(path.Join(path.Dir(name), target))
	if resolved == ".." || strings.HasPrefix(resolved, "../") {
		return fmt.Errorf("%w: symlink %s -> %s points outside the destination", ErrUnsafeArchive, name, target)
	}
	if err := x.mkParent(name); err != nil {
		return err
	}
	if err := x.root.Symlink(target, name); err != nil {
		return fmt.Errorf("%w: symlink %s: %w", ErrUnsafeArchive, name, err)
	}
	x.files = append(x.files, name)
	return nil
}

func (x *extractor) mkParent(name string) error {
	if dir := path.Dir(name); dir != "." {
		if err := x.root.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrUnsafeArchive, name, err)
		}
	}
	return nil
}

// writeFile writes one regular file; size -1 means read to the end.
func (x *extractor) writeFile(name string, r io.Reader, size int64) error {
	if size > x.limits.MaxFile {
		return fmt.Errorf("%w: %s declares %d bytes, more than %d per file", ErrLimit, name, size, x.limits.MaxFile)
	}
	if size > 0 && x.total+size > x.limits.MaxTotal {
		return fmt.Errorf("%w: %s would bring the total past %d bytes", ErrLimit, name, x.limits.MaxTotal)
	}
	if err := x.mkParent(name); err != nil {
		return err
	}
	perm := fs.FileMode(0o644)
	exec := x.opts.isExecutable(name)
	if exec {
		perm = 0o755
	}
	f, err := x.root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrUnsafeArchive, name, err)
	}
	limit := min(x.limits.MaxFile, x.limits.MaxTotal-x.total)
	n, err := io.Copy(f, io.LimitReader(r, limit+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if n > limit {
		return fmt.Errorf("%w: %s is larger than %d bytes", ErrLimit, name, limit)
	}
	x.total += n
	x.files = append(x.files, name)
	if exec {
		x.executables = append(x.executables, name)
	}
	return nil
}

// moveInto renames each top-level entry of staging into dest.
func moveInto(staging, dest string) error {
	entries, err := os.ReadDir(staging)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if _, err := os.Lstat(filepath.Join(dest, e.Name())); err == nil {
			return fmt.Errorf("%w: %s", ErrExists, filepath.Join(dest, e.Name()))
		}
	}
	for i, e := range entries {
		if err := os.Rename(filepath.Join(staging, e.Name()), filepath.Join(dest, e.Name())); err != nil {
			for _, moved := range entries[:i] {
				os.RemoveAll(filepath.Join(dest, moved.Name()))
			}
			return err
		}
	}
	return nil
}

func typeName(t byte) string {
	switch t {
	case tar.TypeChar:
		return "character device"
	case tar.TypeBlock:
		return "block device"
	case tar.TypeFifo:
		return "fifo"
	}
	return fmt.Sprintf("entry of type %q", t)
}
