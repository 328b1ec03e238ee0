package fetch

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"

	"github.com/opencontainers/go-digest"
	"golang.org/x/sync/singleflight"
)

// Cache is a content-addressed store of verified artifacts
// (<dir>/blobs/sha256/<hex>). A blob is only ever stored after its digest
// was checked, so a node never downloads the same digest twice, and
// concurrent fetches of the same artifact coalesce into one download.
type Cache struct {
	dir   string
	group singleflight.Group
	temp  bool // a private cache removed after one fetch: no need to fsync
}

// NewCache opens (creating) a cache directory.
func NewCache(dir string) (*Cache, error) {
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755); err != nil {
		return nil, fmt.Errorf("cache %s: %w", dir, err)
	}
	return &Cache{dir: dir}, nil
}

// Path returns where the blob of digest d is (or would be) stored.
func (c *Cache) Path(d digest.Digest) string {
	return filepath.Join(c.dir, "blobs", d.Algorithm().String(), d.Encoded())
}

// Prune removes every blob of the cache whose digest is not in keep, and
// returns the digests removed. An ingest in progress is not touched: what
// is not yet verified is not under blobs/. Prune and a fetch of a digest
// not in keep must not run at the same time (the fetch may find its blob
// gone): callers hold their own lock around both, as the installer holds
// the node lock.
func (c *Cache) Prune(keep ...digest.Digest) ([]digest.Digest, error) {
	kept := map[digest.Digest]bool{}
	for _, d := range keep {
		kept[d] = true
	}
	var removed []digest.Digest
	var errs []error
	algs, err := os.ReadDir(filepath.Join(c.dir, "blobs"))
	if err != nil {
		return nil, fmt.Errorf("cache %s: %w", c.dir, err)
	}
	for _, alg := range algs {
		entries, err := os.ReadDir(filepath.Join(c.dir, "blobs", alg.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, e := range entries {
			d := digest.NewDigestFromEncoded(digest.Algorithm(alg.Name()), e.Name())
			if kept[d] {
				continue
			}
			if err := os.Remove(filepath.Join(c.dir, "blobs", alg.Name(), e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
				continue
			}
			removed = append(removed, d)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("cache %s: %w", c.dir, err)
	}
	return removed, nil
}

// blob is a verified artifact on disk.
type blob struct {
	path   string
	digest digest.Digest
	size   int64
	cached bool
}

// do runs fill once for concurrent callers with the same key.
func (c *Cache) do(key string, fill func() (blob, error)) (blob, error) {
	v, err, _ := c.group.Do(key, func() (any, error) { return fill() })
	if err != nil {
		return blob{}, err
	}
	return v.(blob), nil
}

// ingest copies r into the cache while hashing it, refusing more than limit
// bytes, and stores it under its digest only when it matches want (when
// want is set) and size (when size >= 0). Nothing unverified is ever
// visible under blobs/.
func (c *Cache) ingest(ctx context.Context, r io.Reader, want digest.Digest, size, limit int64, progress func(done, total int64)) (blob, error) {
	tmp, err := os.CreateTemp(c.dir, ".ingest-")
	if err != nil {
		return blob{}, err
	}
	defer func() {
		tmp.Close()
		os.Remove(tmp.Name())
	}()
	h := sha256.New()
	n, err := copyLimited(ctx, io.MultiWriter(tmp, h), r, size, limit, progress)
	if err != nil {
		return blob{}, err
	}
	got := digestOf(h)
	if want != "" && got != want {
		return blob{}, fmt.Errorf("%w: got %s, want %s", ErrDigestMismatch, got, want)
	}
	if !c.temp {
		if err := tmp.Sync(); err != nil {
			return blob{}, err
		}
	}
	if err := tmp.Close(); err != nil {
		return blob{}, err
	}
	if err := os.Rename(tmp.Name(), c.Path(got)); err != nil {
		return blob{}, err
	}
	return blob{path: c.Path(got), digest: got, size: n}, nil
}

// cachedBlob returns the blob of d when the cache has it.
func (c *Cache) cachedBlob(d digest.Digest) (blob, bool) {
	if d.Validate() != nil {
		return blob{}, false
	}
	fi, err := os.Stat(c.Path(d))
	if err != nil || !fi.Mode().IsRegular() {
		return blob{}, false
	}
	return blob{path: c.Path(d), digest: d, size: fi.Size(), cached: true}, true
}

func digestOf(h hash.Hash) digest.Digest { return digest.NewDigest(digest.SHA256, h) }

// tempCache gives a fetch without a configured cache a private one, removed
// when the fetch is done.
func tempCache(c *Cache) (*Cache, func(), error) {
	if c != nil {
		return c, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "shimkit-fetch-")
	if err != nil {
		return nil, nil, err
	}
	tc, err := NewCache(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	tc.temp = true
	return tc, func() { os.RemoveAll(dir) }, nil
}

// copyLimited copies r to w, reporting progress and stopping when ctx is
// done. More than limit bytes fail with ErrTooLarge; fewer than size (when
// size >= 0) or a body cut short fail with ErrTruncated.
func copyLimited(ctx context.Context, w io.Writer, r io.Reader, size, limit int64, progress func(done, total int64)) (int64, error) {
	pr := &progressReader{r: r, total: size, fn: progress, ctx: ctx}
	n, err := io.Copy(w, io.LimitReader(pr, limit+1))
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return n, fmt.Errorf("%w after %d bytes: %w", ErrTruncated, n, err)
		}
		return n, err
	}
	if n > limit {
		return n, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
	}
	if size >= 0 && n != size {
		return n, fmt.Errorf("%w: got %d of %d bytes", ErrTruncated, n, size)
	}
	return n, nil
}

// progressReader reports bytes read and stops when ctx is done.
type progressReader struct {
	r     io.Reader
	ctx   context.Context
	done  int64
	total int64
	fn    func(done, total int64)
}

func (p *progressReader) Read(b []byte) (int, error) {
	if err := p.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := p.r.Read(b)
	p.done += int64(n)
	if p.fn != nil && n > 0 {
		p.fn(p.done, p.total)
	}
	return n, err
}
