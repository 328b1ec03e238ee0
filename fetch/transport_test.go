package fetch_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/shimkit/shimkit/fetch"
	"github.com/shimkit/shimkit/internal/testutil"
)

// redirectServers are an https and an http server with the same routes:
//
//	/artifact    the artifact
//	/to-http     redirect to the http server's /artifact
//	/to-https    redirect to the https server's /artifact
//	/chain/N     N redirects on the same server, then the artifact
type redirectServers struct {
	tls, plain         *httptest.Server
	tlsReqs, plainReqs atomic.Int64
}

func startRedirectServers(t *testing.T, data []byte) *redirectServers {
	t.Helper()
	s := &redirectServers{}
	handler := func(reqs *atomic.Int64) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			reqs.Add(1)
			switch p := r.URL.Path; {
			case p == "/artifact":
				_, _ = w.Write(data)
			case p == "/to-http":
				http.Redirect(w, r, s.plain.URL+"/artifact", http.StatusFound)
			case p == "/to-https":
				http.Redirect(w, r, s.tls.URL+"/artifact", http.StatusMovedPermanently)
			case strings.HasPrefix(p, "/chain/"):
				n, err := strconv.Atoi(strings.TrimPrefix(p, "/chain/"))
				if err != nil {
					http.NotFound(w, r)
					return
				}
				if n == 0 {
					_, _ = w.Write(data)
					return
				}
				http.Redirect(w, r, fmt.Sprintf("/chain/%d", n-1), http.StatusTemporaryRedirect)
			default:
				http.NotFound(w, r)
			}
		}
	}
	s.tls = httptest.NewTLSServer(handler(&s.tlsReqs))
	s.plain = httptest.NewServer(handler(&s.plainReqs))
	t.Cleanup(s.tls.Close)
	t.Cleanup(s.plain.Close)
	return s
}

// assertCacheEmpty checks that a failed fetch stored nothing, not even a
// temporary file.
func assertCacheEmpty(t *testing.T, dir string) {
	t.Helper()
	for _, d := range []string{dir, filepath.Join(dir, "blobs", "sha256")} {
		entries, err := os.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Name() != "blobs" {
				t.Errorf("cache holds %s after a failed fetch", filepath.Join(d, e.Name()))
			}
		}
	}
}

func TestRedirectPolicy(t *testing.T) {
	ctx := context.Background()
	shim := []byte("\x7fELF...a shim binary...")
	s := startRedirectServers(t, shim)
	tests := []struct {
		name      string
		url       string
		want      error // nil: success
		tlsReqs   int64
		plainReqs int64
	}{
		{name: "https to http refused", url: s.tls.URL + "/to-http", want: fetch.ErrInsecure, tlsReqs: 1},
		{name: "http to https followed", url: s.plain.URL + "/to-https", plainReqs: 1, tlsReqs: 1},
		{name: "https to https followed", url: s.tls.URL + "/chain/1", tlsReqs: 2},
		{name: "10 redirects followed", url: s.tls.URL + "/chain/10", tlsReqs: 11},
		{name: "11 redirects refused", url: s.tls.URL + "/chain/11", want: fetch.ErrTooManyRedirects, tlsReqs: 11},
	}
	ops := []struct {
		name string
		run  func(t *testing.T, f *fetch.HTTPFetcher, cacheDir string) error
	}{
		{"Fetch", func(t *testing.T, f *fetch.HTTPFetcher, cacheDir string) error {
			dest := filepath.Join(t.TempDir(), "d")
			_, err := f.Fetch(ctx, amd64, dest)
			if err != nil {
				assertEmpty(t, dest)
				assertCacheEmpty(t, cacheDir)
			}
			return err
		}},
		{"Digest", func(t *testing.T, f *fetch.HTTPFetcher, _ string) error {
			d, _, err := f.Digest(ctx, amd64)
			if err == nil && d.Encoded() != testutil.SHA256Hex(shim) {
				t.Errorf("digest %s, want sha256:%s", d, testutil.SHA256Hex(shim))
			}
			return err
		}},
		{"Get", func(t *testing.T, f *fetch.HTTPFetcher, _ string) error {
			data, err := f.Get(ctx, f.Artifacts[0].URL, 0)
			if err == nil && string(data) != string(shim) {
				t.Errorf("Get = %q", data)
			}
			return err
		}},
	}
	for _, tt := range tests {
		for _, op := range ops {
			t.Run(tt.name+"/"+op.name, func(t *testing.T) {
				cacheDir := t.TempDir()
				cache, err := fetch.NewCache(cacheDir)
				if err != nil {
					t.Fatal(err)
				}
				f := fetch.NewHTTPFetcher(tt.url, "", fetch.Options{Cache: cache, BinaryName: "containerd-shim-demo-v2"})
				f.Client = s.tls.Client()
				tlsBefore, plainBefore := s.tlsReqs.Load(), s.plainReqs.Load()
				err = op.run(t, f, cacheDir)
				if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
					t.Fatalf("err = %v, want %v", err, tt.want)
				}
				if got := s.tlsReqs.Load() - tlsBefore; got != tt.tlsReqs {
					t.Errorf("%d https requests, want %d (refusals are not retried)", got, tt.tlsReqs)
				}
				if got := s.plainReqs.Load() - plainBefore; got != tt.plainReqs {
					t.Errorf("%d http requests, want %d", got, tt.plainReqs)
				}
				if err != nil && errors.Is(tt.want, fetch.ErrInsecure) && !strings.Contains(err.Error(), s.tls.URL+"/to-http → "+s.plain.URL+"/artifact") {
					t.Errorf("error does not name the hops: %v", err)
				}
			})
		}
	}
}

// TestRedirectPolicyCallerClient: a caller's client gets the policy on a
// copy; its own CheckRedirect still runs, after the policy; the client
// itself is not changed.
func TestRedirectPolicyCallerClient(t *testing.T) {
	ctx := context.Background()
	s := startRedirectServers(t, []byte("signature"))
	var calls atomic.Int64
	callerSaysNo := errors.New("the caller's policy says no")
	base := s.tls.Client()
	transport := base.Transport
	client := &http.Client{Transport: transport, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		calls.Add(1)
		if strings.Contains(req.URL.Path, "/chain/0") && len(via) > 5 {
			return callerSaysNo
		}
		return nil
	}}
	f := &fetch.HTTPFetcher{Client: client}
	tests := []struct {
		name  string
		url   string
		want  error
		calls int64
	}{
		{"caller policy runs on each redirect", s.tls.URL + "/chain/3", nil, 3},
		{"caller policy can refuse", s.tls.URL + "/chain/6", callerSaysNo, 6},
		{"caller policy cannot allow https to http", s.tls.URL + "/to-http", fetch.ErrInsecure, 0},
		{"caller policy cannot allow 11 redirects", s.tls.URL + "/chain/11", fetch.ErrTooManyRedirects, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := calls.Load()
			_, err := f.Get(ctx, tt.url, 0)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if got := calls.Load() - before; got != tt.calls {
				t.Errorf("caller's CheckRedirect ran %d times, want %d", got, tt.calls)
			}
		})
	}
	if _, err := (&fetch.HTTPFetcher{Client: base}).Get(ctx, s.tls.URL+"/chain/1", 0); err != nil {
		t.Fatal(err)
	}
	if client.Transport != transport || base.CheckRedirect != nil {
		t.Error("the caller's client was changed")
	}
	before := calls.Load()
	_ = client.CheckRedirect(&http.Request{URL: &url.URL{Path: "/x"}}, nil)
	if calls.Load() != before+1 {
		t.Error("the caller's CheckRedirect was replaced")
	}
}

func TestLocalRegistry(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost":                              true,
		"localhost:5000":                         true,
		"LOCALHOST:5000":                         true,
		"127.0.0.1":                              true,
		"127.5.5.5:80":                           true,
		"[::1]:5000":                             true,
		"[::1]":                                  true,
		"::1":                                    true,
		"registry.kube-system.svc:5000":          true,
		"registry.kube-system.svc":               true,
		"reg.ns.svc.cluster.local":               true,
		"reg.ns.svc.cluster.local.:5000":         true,
		"registry.example.com":                   false,
		"registry.example.com:5000":              false,
		"10.0.0.1":                               false, // private is not local: see LocalRegistry
		"192.168.1.10:5000":                      false,
		"[fd00::1]:5000":                         false,
		"localhost.example.com":                  false,
		"evil.svc.example.com":                   false,
		"svc":                                    false,
		".svc":                                   false,
		"cluster.local":                          false,
		"registry.svc.cluster.local.example.com": false,
		"registry.kube-system.svc.example.com:443": false,
		"": false,
	} {
		if got := fetch.LocalRegistry(host); got != want {
			t.Errorf("LocalRegistry(%q) = %v, want %v", host, got, want)
		}
	}
}

// TestOCIRedirectPolicy puts an https front before the test registry that
// redirects blob downloads to storage, like registries backed by object
// stores do: to https storage it is followed, to http storage refused.
func TestOCIRedirectPolicy(t *testing.T) {
	ctx := context.Background()
	a := testutil.NewShimArchive(t, "demo", runcShim, nil)
	reg := testutil.StartRegistry(t, "", "")
	for _, repo := range []string{"shims/safe", "shims/unsafe"} {
		reg.PushShim(t, repo, "v1", testutil.PlatformArtifact{MediaType: fetch.MediaTypeShimLayer, Title: "demo.tar.gz", Data: a.Data})
	}
	regURL, _ := url.Parse(reg.URL)
	proxy := httputil.NewSingleHostReverseProxy(regURL)
	var front, storage *httptest.Server
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rest, ok := strings.CutPrefix(r.URL.Path, "/storage"); ok {
			r.URL.Path = rest
			proxy.ServeHTTP(w, r)
			return
		}
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/sha256:") {
			to := front.URL
			if strings.Contains(r.URL.Path, "/unsafe/") {
				to = storage.URL
			}
			http.Redirect(w, r, to+"/storage"+r.URL.Path+"?X-Signature=secret", http.StatusTemporaryRedirect)
			return
		}
		proxy.ServeHTTP(w, r)
	})
	front = httptest.NewTLSServer(handler)
	storage = httptest.NewServer(handler)
	defer front.Close()
	defer storage.Close()
	host := strings.TrimPrefix(front.URL, "https://")

	t.Run("https storage", func(t *testing.T) {
		dest := filepath.Join(t.TempDir(), "d")
		res, err := (&fetch.OCIFetcher{Reference: host + "/shims/safe:v1", Client: front.Client()}).Fetch(ctx, amd64, dest)
		if err != nil {
			t.Fatal(err)
		}
		assertShimBinary(t, dest, a)
		if len(res.Executables) != 1 {
			t.Errorf("executables %v", res.Executables)
		}
	})
	t.Run("http storage", func(t *testing.T) {
		dest := filepath.Join(t.TempDir(), "d")
		_, err := (&fetch.OCIFetcher{Reference: host + "/shims/unsafe:v1", Client: front.Client()}).Fetch(ctx, amd64, dest)
		if !errors.Is(err, fetch.ErrInsecure) {
			t.Fatalf("err = %v, want ErrInsecure", err)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("error shows the storage URL's query: %v", err)
		}
		assertEmpty(t, dest)
	})
}
