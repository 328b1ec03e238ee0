package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"time"

	"github.com/opencontainers/go-digest"
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
// 404 or a digest mismatch fails at once. A redirect from https to http
// fails with ErrInsecure, more than 10 redirects with ErrTooManyRedirects;
// neither is retried. Proxy variables (HTTPS_PROXY, NO_PROXY, ...) and the
// context deadline are honoured.
//
// Digest pins the artifact without storing it, and Get fetches a small
// document (a signature) the same way.
type HTTPFetcher struct {
	Artifacts []HTTPArtifact
	// Client defaults to one that honours the proxy environment and gives
	// up on a server that sends no headers for 30 seconds. A client given
	// here is copied, never changed: the copy gets the redirect policy,
	// chained to the client's own CheckRedirect.
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
	u, err := parseHTTPURL(a.URL)
	if err != nil {
		return nil, fmt.Errorf("fetch %q: %w", a.URL, err)
	}
	return fetchSingle(ctx, f.Options, single{
		source: a.URL, sha256: a.SHA256, bareName: path.Base(u.Path),
		ingest: func(cache *Cache, want digest.Digest) (blob, error) { return f.download(ctx, cache, a.URL, want) },
	}, dest)
}

// download streams the artifact into the cache, verified against want.
func (f *HTTPFetcher) download(ctx context.Context, cache *Cache, rawURL string, want digest.Digest) (blob, error) {
	limit := f.Limits.withDefaults().MaxDownload
	var b blob
	err := f.get(ctx, rawURL, limit, func(body io.Reader, size int64) (err error) {
		b, err = cache.ingest(ctx, body, want, size, limit, f.Progress)
		return err
	})
	return b, err
}

// get requests rawURL until it gets an answer worth keeping and hands the
// body of that 200 answer (and its announced size, -1 when unknown) to
// read. Only 5xx answers and timeouts are retried, with exponential
// backoff; a body announced larger than limit fails at once.
func (f *HTTPFetcher) get(ctx context.Context, rawURL string, limit int64, read func(body io.Reader, size int64) error) error {
	if _, err := parseHTTPURL(rawURL); err != nil {
		return err
	}
	client, release := httpClient(f.Client)
	defer release()
	attempts, backoff := f.Attempts, f.Backoff
	if attempts <= 0 {
		attempts = 4
	}
	if backoff <= 0 {
		backoff = 500 * time.Millisecond
	}
	var last error
	for i := range attempts {
		if i > 0 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("%w (last attempt: %w)", ctx.Err(), last)
			case <-time.After(backoff << (i - 1)):
			}
		}
		err := attempt(ctx, client, rawURL, limit, read)
		if err == nil {
			return nil
		}
		if !retryable(ctx, err) {
			return err
		}
		last = fmt.Errorf("attempt %d of %d: %w", i+1, attempts, err)
	}
	return last
}

// parseHTTPURL accepts only an absolute http(s) URL.
func parseHTTPURL(rawURL string) (*url.URL, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("not an http(s) URL")
	}
	return u, nil
}

// notFoundError is a 404 or 410 answer: ErrNotFound. It reads "artifact
// not found: <status>", or for Get's documents, which are not the artifact
// (a signature next to it), the status alone: the caller says what was
// not found.
type notFoundError struct {
	status   string
	document bool
}

func (e notFoundError) Error() string {
	if e.document {
		return e.status
	}
	return ErrNotFound.Error() + ": " + e.status
}

// Is makes errors.Is(err, ErrNotFound) true.
func (e notFoundError) Is(target error) bool { return target == ErrNotFound }

// errServer marks a 5xx answer, which is worth retrying.
type errServer struct{ status string }

func (e errServer) Error() string { return "server error: " + e.status }

// attempt makes one request.
func attempt(ctx context.Context, client *http.Client, rawURL string, limit int64, read func(body io.Reader, size int64) error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", userAgent)
	resp, err := client.Do(req)
	if err != nil {
		return redactURLError(err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		return notFoundError{status: resp.Status}
	case resp.StatusCode >= 500:
		return errServer{resp.Status}
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("unexpected answer %s", resp.Status)
	}
	if resp.ContentLength > limit {
		return fmt.Errorf("%w: %d bytes announced, limit %d", ErrTooLarge, resp.ContentLength, limit)
	}
	return read(resp.Body, resp.ContentLength)
}

// retryable: 5xx answers and timeouts, unless the caller's context is over
// or the transport policy refused a redirect.
func retryable(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, ErrInsecure) || errors.Is(err, ErrTooManyRedirects) {
		return false
	}
	var se errServer
	if errors.As(err, &se) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded)
}
