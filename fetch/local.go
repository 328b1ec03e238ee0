package fetch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/opencontainers/go-digest"
	"oras.land/oras-go/v2/content/oci"
)

// LocalFetcher takes a shim from this machine: a file (a tarball, plain
// or compressed with gzip, zstd or bzip2, or a bare binary) or an OCI image layout directory, for air-gapped nodes and
// image builds. It verifies and extracts exactly like the network fetchers.
type LocalFetcher struct {
	// Path is the file or the OCI layout directory (one with an oci-layout
	// file).
	Path string
	// SHA256, for a file, is its expected hex digest.
	SHA256 string
	// Reference, for a layout, is a tag or digest; default "latest".
	Reference string
	// MediaTypes, for a layout, are the layer media types to take.
	MediaTypes []string
	Options
}

// Fetch verifies and extracts the local artifact into dest.
func (f *LocalFetcher) Fetch(ctx context.Context, p Platform, dest string) (*Result, error) {
	fi, err := os.Stat(f.Path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("fetch %s: %w: %w", f.Path, ErrNotFound, err)
		}
		return nil, fmt.Errorf("fetch %s: %w", f.Path, err)
	}
	if fi.IsDir() {
		store, err := oci.NewFromFS(ctx, os.DirFS(f.Path))
		if err != nil {
			return nil, fmt.Errorf("fetch %s: OCI layout: %w", f.Path, err)
		}
		ref := f.Reference
		if ref == "" {
			ref = "latest"
		}
		res, err := fetchOCI(ctx, store, ref, p, dest, f.Options, f.MediaTypes)
		if err != nil {
			return nil, fmt.Errorf("fetch %s:%s: %w", f.Path, ref, err)
		}
		return res, nil
	}

	return fetchSingle(ctx, f.Options, single{
		source: f.Path, sha256: f.SHA256, bareName: filepath.Base(f.Path),
		ingest: func(cache *Cache, want digest.Digest) (blob, error) {
			r, err := os.Open(f.Path)
			if err != nil {
				return blob{}, err
			}
			defer r.Close()
			return cache.ingest(ctx, r, want, fi.Size(), f.Limits.withDefaults().MaxDownload, f.Progress)
		},
	}, dest)
}
