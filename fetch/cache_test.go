package fetch_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/shimkit/shimkit/fetch"
	"github.com/shimkit/shimkit/internal/testutil"
)

// Prune keeps the blobs asked for and removes the others; a pruned
// artifact is downloaded again, a kept one is not.
func TestCachePrune(t *testing.T) {
	srv := testutil.StartFileServer(t)
	cache, err := fetch.NewCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var fetchers []*fetch.HTTPFetcher
	var digests []digest.Digest
	for _, name := range []string{"old", "new"} {
		a := testutil.NewShimArchive(t, "demo", runcShim, map[string]string{"VERSION": name})
		f := fetch.NewHTTPFetcher(srv.Add("/"+name+".tar.gz", a.Data), a.SHA256, fetch.Options{Cache: cache})
		if _, err := f.Fetch(context.Background(), amd64, filepath.Join(t.TempDir(), name)); err != nil {
			t.Fatal(err)
		}
		fetchers, digests = append(fetchers, f), append(digests, digest.NewDigestFromEncoded(digest.SHA256, a.SHA256))
	}
	removed, err := cache.Prune(digests[1])
	if err != nil || !slices.Equal(removed, digests[:1]) {
		t.Fatalf("Prune(new): removed %v, %v; want %v", removed, err, digests[:1])
	}
	for i, f := range fetchers {
		before := srv.Requests()
		res, err := f.Fetch(context.Background(), amd64, filepath.Join(t.TempDir(), "again"))
		if err != nil {
			t.Fatal(err)
		}
		if want := i == 1; res.Cached != want || (srv.Requests() == before) != want {
			t.Errorf("%s after the prune: cached %v, %d requests; want cached %v", digests[i], res.Cached, srv.Requests()-before, want)
		}
	}
	if removed, err := cache.Prune(); err != nil || len(removed) != 2 {
		t.Errorf("Prune(): removed %v, %v; want both", removed, err)
	}
}
