package fetch

import (
	"context"
	"fmt"

	"github.com/opencontainers/go-digest"
)

// single is a one-blob artifact (a URL or a file): its source for
// messages, the expected sha256 (optional), the bare binary's default name,
// and how to get it into the cache when it is not there.
type single struct {
	source   string
	sha256   string
	bareName string
	ingest   func(cache *Cache, want digest.Digest) (blob, error)
}

// fetchSingle verifies (or takes from the cache) a one-blob artifact and
// extracts it into dest. With an expected digest, concurrent fetches of it
// coalesce and a cached copy is used without fetching.
func fetchSingle(ctx context.Context, o Options, s single, dest string) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var want digest.Digest
	if s.sha256 != "" {
		want = digest.NewDigestFromEncoded(digest.SHA256, s.sha256)
		if err := want.Validate(); err != nil {
			return nil, fmt.Errorf("fetch %s: sha256 %q: %w", s.source, s.sha256, err)
		}
	}
	cache, done, err := tempCache(o.Cache)
	if err != nil {
		return nil, err
	}
	defer done()
	key := "source:" + s.source
	if want != "" {
		key = want.String()
	}
	b, err := cache.do(key, func() (blob, error) {
		if b, ok := cache.cachedBlob(want); ok {
			return b, nil
		}
		return s.ingest(cache, want)
	})
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", s.source, err)
	}
	name := o.BinaryName
	if name == "" {
		name = s.bareName
	}
	files, execs, err := extract(b.path, dest, name, o)
	if err != nil {
		return nil, fmt.Errorf("extract %s (%s): %w", s.source, b.digest, err)
	}
	return &Result{Digest: b.digest, Size: b.size, Files: files, Executables: execs, Cached: b.cached}, nil
}
