package fetch_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"

	"github.com/shimkit/shimkit/fetch"
	"github.com/shimkit/shimkit/internal/testutil"
)

func TestResolveOCI(t *testing.T) {
	ctx := context.Background()
	amd := testutil.NewShimArchive(t, "demo", runcShim, map[string]string{"ARCH": "amd64\n"})
	arm := testutil.NewShimArchive(t, "demo", runcShim, map[string]string{"ARCH": "arm64\n"})
	reg := testutil.StartRegistry(t, "puller", "s3cret")
	v1 := reg.PushShim(t, "shims/demo", "v1", platformArtifacts(amd, arm)...)
	single := reg.PushShim(t, "shims/single", "v1", testutil.PlatformArtifact{MediaType: fetch.MediaTypeShimLayer, Data: amd.Data})
	// A tag on something that is not an image index or manifest.
	odd := content.NewDescriptorFromBytes("application/vnd.example.other+json", []byte(`{"other":true}`))
	if err := reg.Repository(t, "shims/odd").Manifests().PushReference(ctx, odd, bytes.NewReader([]byte(`{"other":true}`)), "v1"); err != nil {
		t.Fatal(err)
	}
	creds := fetch.RegistryOptions{PlainHTTP: true, DockerConfigJSON: reg.DockerConfigJSON("puller", "s3cret")}

	tests := []struct {
		name      string
		reference string
		opts      fetch.RegistryOptions
		want      ocispec.Descriptor // zero: an error
		err       error              // nil with a zero want: any error
	}{
		{name: "tag", reference: reg.Host + "/shims/demo:v1", opts: creds, want: v1},
		{name: "digest", reference: reg.Host + "/shims/demo@" + v1.Digest.String(), opts: creds, want: v1},
		{name: "single-platform manifest", reference: reg.Host + "/shims/single:v1", opts: creds, want: single},
		{name: "unknown tag", reference: reg.Host + "/shims/demo:v9", opts: creds, err: fetch.ErrNotFound},
		{name: "unknown digest", reference: reg.Host + "/shims/demo@" + digest.FromString("x").String(), opts: creds, err: fetch.ErrNotFound},
		{name: "no credentials", reference: reg.Host + "/shims/demo:v1", opts: fetch.RegistryOptions{PlainHTTP: true}, err: fetch.ErrUnauthorized},
		{name: "wrong password", reference: reg.Host + "/shims/demo:v1", opts: fetch.RegistryOptions{PlainHTTP: true, DockerConfigJSON: reg.DockerConfigJSON("puller", "x")}, err: fetch.ErrUnauthorized},
		{name: "not an index or manifest", reference: reg.Host + "/shims/odd:v1", opts: creds},
		{name: "bad reference", reference: "not a reference", opts: creds},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := fetch.ResolveOCI(ctx, tt.reference, tt.opts)
			if tt.want.Digest != "" {
				if err != nil {
					t.Fatal(err)
				}
				if got.Digest != tt.want.Digest || got.MediaType != tt.want.MediaType || got.Size != tt.want.Size {
					t.Errorf("resolved %v, want %v", got, tt.want)
				}
				return
			}
			if err == nil || tt.err != nil && !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if !strings.Contains(err.Error(), tt.reference) {
				t.Errorf("error does not name the reference: %v", err)
			}
		})
	}

	t.Run("moved tag resolves to the new digest", func(t *testing.T) {
		amd2 := testutil.NewShimArchive(t, "demo", runcShim, map[string]string{"VERSION": "2\n"})
		v2 := reg.PushShim(t, "shims/demo", "v1", platformArtifacts(amd2, arm)...)
		got, err := fetch.ResolveOCI(ctx, reg.Host+"/shims/demo:v1", creds)
		if err != nil {
			t.Fatal(err)
		}
		if got.Digest != v2.Digest || got.Digest == v1.Digest {
			t.Errorf("resolved %s, want the moved-to %s (was %s)", got.Digest, v2.Digest, v1.Digest)
		}
	})
}

// roundTripFunc is an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestPlainHTTPPolicy: plain HTTP to a registry that is neither loopback
// nor cluster-local fails before any request, unless Insecure.
func TestPlainHTTPPolicy(t *testing.T) {
	ctx := context.Background()
	const ref = "registry.example.com/shims/demo:v1"
	errOffline := errors.New("offline")
	ops := []struct {
		name string
		run  func(o fetch.RegistryOptions) error
	}{
		{"ResolveOCI", func(o fetch.RegistryOptions) error {
			_, err := fetch.ResolveOCI(ctx, ref, o)
			return err
		}},
		{"OCIFetcher", func(o fetch.RegistryOptions) error {
			f := &fetch.OCIFetcher{Reference: ref, PlainHTTP: o.PlainHTTP, Insecure: o.Insecure, Client: o.Client}
			_, err := f.Fetch(ctx, amd64, t.TempDir()+"/d")
			return err
		}},
		{"NewRepository", func(o fetch.RegistryOptions) error {
			repo, _, err := fetch.NewRepository(ref, o)
			if err != nil {
				return err
			}
			_, err = repo.Resolve(ctx, "v1")
			return err
		}},
	}
	for _, op := range ops {
		for _, tt := range []struct {
			name     string
			insecure bool
			want     error
			requests int64
		}{
			{"refused without Insecure", false, fetch.ErrInsecure, 0},
			{"attempted with Insecure", true, errOffline, 1},
		} {
			t.Run(op.name+"/"+tt.name, func(t *testing.T) {
				var requests atomic.Int64
				client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
					requests.Add(1)
					if r.URL.Scheme != "http" {
						t.Errorf("request to %s, want plain HTTP", r.URL)
					}
					return nil, errOffline
				})}
				err := op.run(fetch.RegistryOptions{PlainHTTP: true, Insecure: tt.insecure, Client: client})
				if !errors.Is(err, tt.want) {
					t.Fatalf("err = %v, want %v", err, tt.want)
				}
				if got := requests.Load(); got != tt.requests {
					t.Errorf("%d requests, want %d", got, tt.requests)
				}
			})
		}
	}
}

func TestHTTPDigest(t *testing.T) {
	ctx := context.Background()
	v1, v2 := []byte("shim v1"), []byte("shim v2, longer")
	srv := testutil.StartFileServer(t)
	url := srv.Add("/shim", v1)
	srv.Add("/big", bytes.Repeat([]byte("x"), 4096))
	// /stream sends 4 KiB without a Content-Length.
	stream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for range 4 {
			_, _ = w.Write(bytes.Repeat([]byte("y"), 1024))
			w.(http.Flusher).Flush()
		}
	}))
	defer stream.Close()
	cache, err := fetch.NewCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pinned := fetch.NewHTTPFetcher(srv.URL+"/nowhere", testutil.SHA256Hex(v1), fetch.Options{})
	fast := func(rawURL string, o fetch.Options) *fetch.HTTPFetcher {
		f := fetch.NewHTTPFetcher(rawURL, "", o)
		f.Backoff = 10 * time.Millisecond
		return f
	}

	tests := []struct {
		name     string
		fetcher  *fetch.HTTPFetcher
		before   func()
		faults   []testutil.Fault
		want     []byte // nil: an error
		wantSize int64
		err      error
		requests int64
	}{
		{name: "digest of the content", fetcher: fast(url, fetch.Options{}), want: v1, wantSize: int64(len(v1)), requests: 1},
		{name: "content changed at the URL", fetcher: fast(url, fetch.Options{}), before: func() { srv.Add("/shim", v2) }, want: v2, wantSize: int64(len(v2)), requests: 1},
		{name: "5xx then 200 is retried", fetcher: fast(url, fetch.Options{}), faults: []testutil.Fault{{Status: 502}}, want: v2, wantSize: int64(len(v2)), requests: 2},
		{name: "404", fetcher: fast(srv.URL+"/missing", fetch.Options{}), err: fetch.ErrNotFound, requests: 1},
		{name: "announced over MaxDownload", fetcher: fast(srv.URL+"/big", fetch.Options{Limits: fetch.Limits{MaxDownload: 1024}}), err: fetch.ErrTooLarge, requests: 1},
		{name: "streamed over MaxDownload", fetcher: fast(stream.URL, fetch.Options{Limits: fetch.Limits{MaxDownload: 1024}}), err: fetch.ErrTooLarge},
		{name: "streamed without a length", fetcher: fast(stream.URL, fetch.Options{}), want: bytes.Repeat([]byte("y"), 4096), wantSize: 4096},
		{name: "SHA256 set: no request", fetcher: pinned, want: v1, wantSize: -1},
		{name: "SHA256 set and cached: its size", fetcher: fetch.NewHTTPFetcher(srv.URL+"/nowhere", testutil.SHA256Hex(v1), fetch.Options{Cache: cache}),
			before: func() {
				if _, err := fetch.NewHTTPFetcher(srv.URL+"/shim-v1", testutil.SHA256Hex(v1), fetch.Options{Cache: cache, BinaryName: "containerd-shim-demo-v2"}).
					Fetch(ctx, amd64, t.TempDir()+"/d"); err != nil {
					t.Fatal(err)
				}
			}, want: v1, wantSize: int64(len(v1))},
		{name: "SHA256 invalid", fetcher: fetch.NewHTTPFetcher(url, "nothex", fetch.Options{})},
	}
	srv.Add("/shim-v1", v1)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.before != nil {
				tt.before()
			}
			srv.Inject("/shim", tt.faults...)
			before := srv.Requests()
			d, size, err := tt.fetcher.Digest(ctx, amd64)
			if got := srv.Requests() - before; got != tt.requests {
				t.Errorf("%d requests, want %d", got, tt.requests)
			}
			if tt.want == nil {
				if err == nil || tt.err != nil && !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d != digest.FromBytes(tt.want) || size != tt.wantSize {
				t.Errorf("Digest = %s, %d; want %s, %d", d, size, digest.FromBytes(tt.want), tt.wantSize)
			}
		})
	}

	t.Run("progress", func(t *testing.T) {
		var last, total int64
		f := fast(url, fetch.Options{Progress: func(done, tot int64) { last, total = done, tot }})
		if _, _, err := f.Digest(ctx, amd64); err != nil {
			t.Fatal(err)
		}
		if last != int64(len(v2)) || total != int64(len(v2)) {
			t.Errorf("progress %d/%d, want %d/%d", last, total, len(v2), len(v2))
		}
	})
}

// errAny in a test table stands for "some error", with no sentinel.
var errAny = errors.New("any error")

// TestHTTPDigestMemory: pinning a 100 MiB artifact does not hold it.
func TestHTTPDigestMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 100 MiB")
	}
	const size = 100 << 20
	url, want := streamServer(t, size)
	f := fetch.NewHTTPFetcher(url, "", fetch.Options{})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	d, n, err := f.Digest(context.Background(), amd64)
	runtime.ReadMemStats(&after)
	if err != nil || d != want || n != size {
		t.Fatalf("Digest = %s, %d, %v; want %s", d, n, err, want)
	}
	// Both ends of the connection run in this process; together they may
	// allocate a few buffers, not the stream.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
		t.Errorf("Digest of %d MiB allocated %d KiB", size>>20, alloc>>10)
	}
}

func TestHTTPGet(t *testing.T) {
	ctx := context.Background()
	sig := []byte("MEUCIQD...signature")
	srv := testutil.StartFileServer(t)
	url := srv.Add("/shim.sig", sig)
	srv.Add("/big.sig", bytes.Repeat([]byte("s"), 2<<20))
	f := &fetch.HTTPFetcher{Backoff: 10 * time.Millisecond}
	tests := []struct {
		name     string
		url      string
		limit    int64
		faults   []testutil.Fault
		err      error
		requests int64
	}{
		{name: "ok", url: url, limit: 1024, requests: 1},
		{name: "5xx then 200 is retried", url: url, faults: []testutil.Fault{{Status: 500}}, requests: 2},
		{name: "404", url: srv.URL + "/missing.sig", err: fetch.ErrNotFound, requests: 1},
		{name: "over the limit", url: url, limit: 8, err: fetch.ErrTooLarge, requests: 1},
		{name: "over the default limit of 1 MiB", url: srv.URL + "/big.sig", err: fetch.ErrTooLarge, requests: 1},
		{name: "truncated", url: url, faults: []testutil.Fault{{Truncate: 4}}, err: fetch.ErrTruncated, requests: 1},
		{name: "not http", url: "file:///etc/passwd", err: errAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv.Inject("/shim.sig", tt.faults...)
			before := srv.Requests()
			data, err := f.Get(ctx, tt.url, tt.limit)
			if got := srv.Requests() - before; got != tt.requests {
				t.Errorf("%d requests, want %d", got, tt.requests)
			}
			if tt.err == nil {
				if err != nil || !bytes.Equal(data, sig) {
					t.Fatalf("Get = %q, %v", data, err)
				}
				return
			}
			if err == nil || !errors.Is(tt.err, errAny) && !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if !strings.Contains(err.Error(), tt.url) {
				t.Errorf("error does not name the URL: %v", err)
			}
		})
	}
}

// TestGetNotFound: Get's 404 is ErrNotFound and names the URL and the
// status, not "artifact" (Get reads documents next to an artifact, and
// the caller says which); the artifact's own 404 still says "artifact not
// found".
func TestGetNotFound(t *testing.T) {
	srv := testutil.StartFileServer(t)
	f := fetch.NewHTTPFetcher(srv.URL+"/gone.tar.gz", "", fetch.Options{})
	_, err := f.Get(context.Background(), srv.URL+"/gone.sig", 0)
	if !errors.Is(err, fetch.ErrNotFound) || err.Error() != "get "+srv.URL+"/gone.sig: 404 Not Found" {
		t.Errorf("Get: %v", err)
	}
	_, _, err = f.Digest(context.Background(), fetch.Platform{})
	if !errors.Is(err, fetch.ErrNotFound) || !strings.Contains(err.Error(), "artifact not found: 404 Not Found") {
		t.Errorf("Digest: %v", err)
	}
}
