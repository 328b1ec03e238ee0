package fetch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/opencontainers/go-digest"
)

// DirFetcher takes a shim from a directory tree on this machine: the
// files of a container image that the kubelet mounted into the installer's
// pod (an image volume) or copied there (the fallback where image volumes
// are not served). The kubelet pulled the image by digest, so Digest is
// recorded as the artifact's, not computed again. The tree goes through
// the checks an archive's entries do: the limits, no link leading out of
// it, nothing but files, directories and links, and only the names
// Options.Executables matches become executable.
type DirFetcher struct {
	// Path is the directory.
	Path string
	// Digest is the image's pinned digest ("sha256:<hex>"), what Result
	// reports.
	Digest digest.Digest
	Options
}

var _ Fetcher = (*DirFetcher)(nil)

// Fetch copies the tree into dest; on any error dest is as it was.
func (f *DirFetcher) Fetch(ctx context.Context, _ Platform, dest string) (*Result, error) {
	src, err := os.OpenRoot(f.Path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("fetch %s: %w: %w", f.Path, ErrNotFound, err)
		}
		return nil, fmt.Errorf("fetch %s: %w", f.Path, err)
	}
	defer src.Close()
	var size int64
	files, execs, err := extractWith(dest, f.Options, func(x *extractor) error {
		return fs.WalkDir(src.FS(), ".", func(name string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if name == "." {
				return nil
			}
			n, err := x.copyEntry(src, name, d)
			size += n
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", f.Path, err)
	}
	return &Result{Digest: f.Digest, Size: size, Files: files, Executables: execs}, nil
}

// copyEntry copies one entry of src's tree (a walk's name and entry) and
// returns the bytes it copied.
func (x *extractor) copyEntry(src *os.Root, name string, d fs.DirEntry) (int64, error) {
	x.entries++
	if x.entries > x.limits.MaxEntries {
		return 0, fmt.Errorf("%w: more than %d entries", ErrLimit, x.limits.MaxEntries)
	}
	switch t := d.Type(); {
	case t.IsDir():
		if err := x.root.MkdirAll(name, 0o755); err != nil {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
		return 0, nil
	case t&fs.ModeSymlink != 0:
		target, err := src.Readlink(name)
		if err != nil {
			return 0, err
		}
		return 0, x.symlink(name, target)
	case t.IsRegular():
		r, err := src.Open(name)
		if err != nil {
			return 0, err
		}
		defer r.Close()
		fi, err := r.Stat()
		if err != nil {
			return 0, err
		}
		return fi.Size(), x.writeFile(name, r, fi.Size())
	default:
		return 0, fmt.Errorf("%w: %s is a %s, not a file, directory or link", ErrUnsafeArchive, name, t.Type())
	}
}
