package fetch_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/shimkit/shimkit/fetch"
	"github.com/shimkit/shimkit/internal/testutil"
)

const runcShim = "/usr/bin/containerd-shim-runc-v2"

var (
	amd64 = fetch.Platform{OS: "linux", Architecture: "amd64"}
	arm64 = fetch.Platform{OS: "linux", Architecture: "arm64"}
)

// assertShim checks that dest holds exactly the archive's shim, executable.
func assertShim(t *testing.T, dest string, a testutil.ShimArchive, res *fetch.Result) {
	t.Helper()
	if res.Digest.Encoded() != a.SHA256 {
		t.Errorf("digest %s, want sha256:%s", res.Digest, a.SHA256)
	}
	if !slices.Equal(res.Executables, []string{a.BinaryName()}) {
		t.Errorf("executables %v, want [%s]", res.Executables, a.BinaryName())
	}
	assertShimBinary(t, dest, a)
}

// assertShimBinary checks the extracted shim binary's mode and size.
func assertShimBinary(t *testing.T, dest string, a testutil.ShimArchive) {
	t.Helper()
	fi, err := os.Stat(filepath.Join(dest, a.BinaryName()))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o755 || fi.Size() != int64(len(a.Binary)) {
		t.Errorf("%s: mode %v size %d", a.BinaryName(), fi.Mode(), fi.Size())
	}
}

// assertEmpty checks that a failed fetch left nothing in dest.
func assertEmpty(t *testing.T, dest string) {
	t.Helper()
	entries, err := os.ReadDir(dest)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("dest not empty after a failed fetch: %v", entries)
	}
}

func TestHTTPFetch(t *testing.T) {
	a := testutil.NewShimArchive(t, "demo", runcShim, map[string]string{"README.md": "demo shim\n"})
	arm := testutil.NewShimArchive(t, "demo", runcShim, map[string]string{"ARCH": "arm64\n"})
	srv := testutil.StartFileServer(t)
	url := srv.Add("/demo.tar.gz", a.Data)
	armURL := srv.Add("/demo-arm64.tar.gz", arm.Data)
	srv.Add("/truncated.tar.gz", a.Data)
	srv.Add("/slow.tar.gz", a.Data)

	tests := []struct {
		name      string
		fetcher   *fetch.HTTPFetcher
		platform  fetch.Platform
		faults    []testutil.Fault
		faultPath string
		timeout   time.Duration
		want      error // nil: success
		wantReqs  int64
		archive   testutil.ShimArchive
	}{
		{name: "with digest", fetcher: fetch.NewHTTPFetcher(url, a.SHA256, fetch.Options{}), platform: amd64, wantReqs: 1, archive: a},
		{name: "without digest", fetcher: fetch.NewHTTPFetcher(url, "", fetch.Options{}), platform: amd64, wantReqs: 1, archive: a},
		{
			name: "per-platform arm64 via aarch64 alias",
			fetcher: &fetch.HTTPFetcher{Artifacts: []fetch.HTTPArtifact{
				{Platform: fetch.Platform{OS: "linux", Architecture: "x86_64"}, URL: url, SHA256: a.SHA256},
				{Platform: fetch.Platform{OS: "linux", Architecture: "aarch64"}, URL: armURL, SHA256: arm.SHA256},
			}},
			platform: arm64, wantReqs: 1, archive: arm,
		},
		{
			name: "per-platform amd64",
			fetcher: &fetch.HTTPFetcher{Artifacts: []fetch.HTTPArtifact{
				{Platform: arm64, URL: armURL, SHA256: arm.SHA256},
				{Platform: amd64, URL: url, SHA256: a.SHA256},
			}},
			platform: amd64, wantReqs: 1, archive: a,
		},
		{
			name:     "no artifact for platform",
			fetcher:  &fetch.HTTPFetcher{Artifacts: []fetch.HTTPArtifact{{Platform: amd64, URL: url}}},
			platform: arm64, want: fetch.ErrPlatform,
		},
		{name: "digest mismatch fails at once", fetcher: fetch.NewHTTPFetcher(url, arm.SHA256, fetch.Options{}), platform: amd64, want: fetch.ErrDigestMismatch, wantReqs: 1},
		{name: "404 fails at once", fetcher: fetch.NewHTTPFetcher(srv.URL+"/missing.tar.gz", "", fetch.Options{}), platform: amd64, want: fetch.ErrNotFound, wantReqs: 1},
		{
			name: "500 then success is retried", fetcher: &fetch.HTTPFetcher{Artifacts: []fetch.HTTPArtifact{{URL: url, SHA256: a.SHA256}}, Backoff: 10 * time.Millisecond},
			platform: amd64, faultPath: "/demo.tar.gz", faults: []testutil.Fault{{Status: 500}, {Status: 503}}, wantReqs: 3, archive: a,
		},
		{
			name: "500 every time gives up", fetcher: &fetch.HTTPFetcher{Artifacts: []fetch.HTTPArtifact{{URL: url}}, Attempts: 3, Backoff: 10 * time.Millisecond},
			platform: amd64, faultPath: "/demo.tar.gz", faults: []testutil.Fault{{Status: 500}, {Status: 500}, {Status: 500}}, want: errServer, wantReqs: 3,
		},
		{
			name: "truncated body", fetcher: fetch.NewHTTPFetcher(srv.URL+"/truncated.tar.gz", "", fetch.Options{}),
			platform: amd64, faultPath: "/truncated.tar.gz", faults: []testutil.Fault{{Truncate: 1000}}, want: fetch.ErrTruncated, wantReqs: 1,
		},
		{
			name: "slow server against the deadline", fetcher: fetch.NewHTTPFetcher(srv.URL+"/slow.tar.gz", a.SHA256, fetch.Options{}),
			platform: amd64, faultPath: "/slow.tar.gz", faults: []testutil.Fault{{Delay: 10 * time.Second}}, timeout: 300 * time.Millisecond,
			want: context.DeadlineExceeded, wantReqs: 1,
		},
		{
			name: "larger than the download limit", fetcher: fetch.NewHTTPFetcher(url, "", fetch.Options{Limits: fetch.Limits{MaxDownload: 1024}}),
			platform: amd64, want: fetch.ErrTooLarge, wantReqs: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.faultPath != "" {
				srv.Inject(tt.faultPath, tt.faults...)
			}
			ctx := context.Background()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			dest := filepath.Join(t.TempDir(), "dest")
			before := srv.Requests()
			start := time.Now()
			res, err := tt.fetcher.Fetch(ctx, tt.platform, dest)
			if got := srv.Requests() - before; got != tt.wantReqs {
				t.Errorf("%d requests, want %d", got, tt.wantReqs)
			}
			if tt.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				assertShim(t, dest, tt.archive, res)
				return
			}
			if !isErr(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if tt.timeout > 0 && time.Since(start) > 2*time.Second {
				t.Errorf("took %v, the deadline was %v", time.Since(start), tt.timeout)
			}
			assertEmpty(t, dest)
		})
	}
}

// errServer stands for "a 5xx after all attempts", which has no sentinel.
var errServer = errors.New("5xx")

func isErr(err, want error) bool {
	if errors.Is(want, errServer) {
		return err != nil && !errors.Is(err, fetch.ErrNotFound) && !errors.Is(err, fetch.ErrDigestMismatch)
	}
	return errors.Is(err, want)
}

func TestHTTPCacheAndCoalescing(t *testing.T) {
	a := testutil.NewShimArchive(t, "demo", runcShim, nil)
	srv := testutil.StartFileServer(t)
	url := srv.Add("/demo.tar.gz", a.Data)
	// A slow answer keeps the first download in flight while the others
	// arrive.
	srv.Inject("/demo.tar.gz", testutil.Fault{Delay: 300 * time.Millisecond})
	cache, err := fetch.NewCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := fetch.NewHTTPFetcher(url, a.SHA256, fetch.Options{Cache: cache})

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			dest := filepath.Join(t.TempDir(), "dest", string(rune('a'+i)))
			if _, err := f.Fetch(context.Background(), amd64, dest); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := srv.Requests(); n != 1 {
		t.Errorf("8 concurrent fetches of one digest made %d requests, want 1", n)
	}
	dest := filepath.Join(t.TempDir(), "again")
	res, err := f.Fetch(context.Background(), amd64, dest)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Cached || srv.Requests() != 1 {
		t.Errorf("second fetch: cached=%v requests=%d; want served from the cache", res.Cached, srv.Requests())
	}
	assertShim(t, dest, a, res)
}

func TestHTTPProgress(t *testing.T) {
	a := testutil.NewShimArchive(t, "demo", runcShim, nil)
	srv := testutil.StartFileServer(t)
	var last, total int64
	calls := 0
	f := fetch.NewHTTPFetcher(srv.Add("/demo.tar.gz", a.Data), a.SHA256, fetch.Options{Progress: func(done, tot int64) {
		if done < last {
			t.Errorf("progress went back: %d after %d", done, last)
		}
		last, total = done, tot
		calls++
	}})
	if _, err := f.Fetch(context.Background(), amd64, t.TempDir()+"/d"); err != nil {
		t.Fatal(err)
	}
	if calls == 0 || last != int64(len(a.Data)) || total != int64(len(a.Data)) {
		t.Errorf("progress: %d calls, last %d/%d, want %d", calls, last, total, len(a.Data))
	}
}

// TestHTTPProxyFromEnvironment sends the download through the proxy named
// in HTTP_PROXY, to a host name only the proxy knows.
func TestHTTPProxyFromEnvironment(t *testing.T) {
	a := testutil.NewShimArchive(t, "demo", runcShim, nil)
	var proxied []string
	var mu sync.Mutex
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		proxied = append(proxied, r.URL.String())
		mu.Unlock()
		if r.URL.Host != "artifacts.shimkit.test" {
			http.Error(w, "unknown host", http.StatusBadGateway)
			return
		}
		_, _ = w.Write(a.Data)
	}))
	defer proxy.Close()
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("http_proxy", proxy.URL)
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	f := fetch.NewHTTPFetcher("http://artifacts.shimkit.test/demo.tar.gz", a.SHA256, fetch.Options{})
	dest := t.TempDir() + "/d"
	res, err := f.Fetch(context.Background(), amd64, dest)
	if err != nil {
		t.Fatal(err)
	}
	assertShim(t, dest, a, res)
	if len(proxied) != 1 || proxied[0] != "http://artifacts.shimkit.test/demo.tar.gz" {
		t.Errorf("proxy saw %v", proxied)
	}
}

func TestParsePlatform(t *testing.T) {
	for in, want := range map[string]fetch.Platform{
		"linux/amd64": amd64, "linux/x86_64": amd64, "linux/arm64": arm64, "linux/aarch64": arm64,
	} {
		if got, err := fetch.ParsePlatform(in); err != nil || got != want {
			t.Errorf("ParsePlatform(%s) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"linux/riscv64", "windows/amd64", "amd64", ""} {
		if _, err := fetch.ParsePlatform(in); !errors.Is(err, fetch.ErrPlatform) {
			t.Errorf("ParsePlatform(%q) = %v, want ErrPlatform", in, err)
		}
	}
}
