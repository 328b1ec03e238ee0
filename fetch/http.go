package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"time"

	"github.com/opencontainers/go-digest"
	"golang.org/x/net/http/httpproxy"
)

// HTTPArtifact is one downloadable artifact, for one platform or (with a
// zero Platform) for any.
type HTTPArtifact struct {
	Platform Platform
	URL      string
	// SHA256 is the hex digest of the artifact. It is optional but strongly
	// recommended: with it a tampered or corrupted download is rejected
	// before anything is extracted, and a cached copy is used without any
	// download.
	SHA256 string
}

// HTTPFetcher downloads an artifact anonymously over HTTP(S), the Shim
// API's anonHttp fetch strategy. The body is hashed while it streams into
// the cache and verified before anything is extracted or made executable.
// Only 5xx answers and timeouts are retried, with exponential backoff; a
// 404 or a digest mismatch fails at once. Proxy variables (HTTPS_PROXY,
// NO_PROXY, ...) and the context deadline are honoured.
type HTTPFetcher struct {
	Artifacts []HTTPArtifact
	// Client defaults to one that honours the proxy environment and gives
	// up on a server that sends no headers for 30 seconds.
	Client *http.Client
	// Attempts is how many times to try in all; default 4.
	Attempts int
	// Backoff is the wait before the first retry, doubled each time;
	// default 500ms.
	Backoff time.Duration
	Options
}

// NewHTTPFetcher returns a fetcher for one platform-independent URL.
func NewHTTPFetcher(rawURL, sha256 string, o Options) *HTTPFetcher {
	return &HTTPFetcher{Artifacts: []HTTPArtifact{{URL: rawURL, SHA256: sha256}}, Options: o}
}

// defaultHTTPClient reads the proxy variables when it is made (not once
// per process, as http.ProxyFromEnvironment does).
func defaultHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	proxy := httpproxy.FromEnvironment().ProxyFunc()
	t.Proxy = func(r *http.Request) (*url.URL, error) { return proxy(r.URL) }
	t.ResponseHeaderTimeout = 30 * time.Second
	return &http.Client{Transport: t}
}

// pick returns the artifact for p: an exact platform match first, then a
// platform-independent one.
func (f *HTTPFetcher) pick(p Platform) (HTTPArtifact, error) {
	for _, a := range f.Artifacts {
		if !a.Platform.IsZero() && p.matches(a.Platform) {
			return a, nil
		}
	}
	for _, a := range f.Artifacts {
		if a.Platform.IsZero() {
			return a, nil
		}
	}
	return HTTPArtifact{}, fmt.Errorf("%w %s", ErrPlatform, p)
}

// Fetch downloads (or takes from the cache) the artifact for p and extracts
// it into dest.
func (f *HTTPFetcher) Fetch(ctx context.Context, p Platform, dest string) (*Result, error) {
	a, err := f.pick(p)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(a.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("fetch %q: not an http(s) URL", a.URL)
	}
	return fetchSingle(ctx, f.Options, single{
		source: a.URL, sha256: a.SHA256, bareName: path.Base(u.Path),
		ingest: func(cache *Cache, want digest.Digest) (blob, error) { return f.download(ctx, cache, a.URL, want) },
	}, dest)
}

// download tries the URL until it gets an answer worth keeping.
func (f *HTTPFetcher) download(ctx context.Context, cache *Cache, rawURL string, want digest.Digest) (blob, error) {
	client := f.Client
	if client == nil {
		client = defaultHTTPClient()
	}
	attempts, backoff := f.Attempts, f.Backoff
	if attempts <= 0 {
		attempts = 4
	}
	if backoff <= 0 {
		backoff = 500 * time.Millisecond
	}
	limit := f.Limits.withDefaults().MaxDownload
	var last error
	for i := range attempts {
		if i > 0 {
			select {
			case <-ctx.Done():
				return blob{}, fmt.Errorf("%w (last attempt: %w)", ctx.Err(), last)
			case <-time.After(backoff << (i - 1)):
			}
		}
		b, err := f.attempt(ctx, client, cache, rawURL, want, limit)
		if err == nil {
			return b, nil
		}
		if !retryable(ctx, err) {
			return blob{}, err
		}
		last = fmt.Errorf("attempt %d of %d: %w", i+1, attempts, err)
	}
	return blob{}, last
}

// errServer marks a 5xx answer, which is worth retrying.
type errServer struct{ status string }

func (e errServer) Error() string { return "server error: " + e.status }

func (f *HTTPFetcher) attempt(ctx context.Context, client *http.Client, cache *Cache, rawURL string, want digest.Digest, limit int64) (blob, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return blob{}, err
	}
	req.Header.Set("User-Agent", "shimkit-fetch")
	resp, err := client.Do(req)
	if err != nil {
		return blob{}, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		return blob{}, fmt.Errorf("%w: %s", ErrNotFound, resp.Status)
	case resp.StatusCode >= 500:
		return blob{}, errServer{resp.Status}
	case resp.StatusCode != http.StatusOK:
		return blob{}, fmt.Errorf("unexpected answer %s", resp.Status)
	}
	if resp.ContentLength > limit {
		return blob{}, fmt.Errorf("%w: %d bytes announced, limit %d", ErrTooLarge, resp.ContentLength, limit)
	}
	return cache.ingest(ctx, resp.Body, want, resp.ContentLength, limit, f.Progress)
}

// retryable: 5xx answers and timeouts, unless the caller's context is over.
func retryable(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var se errServer
	if errors.As(err, &se) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded)
}
