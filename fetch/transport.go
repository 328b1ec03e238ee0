package fetch

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"golang.org/x/net/http/httpproxy"
	"oras.land/oras-go/v2/registry/remote/retry"
)

// userAgent is sent with every request the package makes.
const userAgent = "shimkit-fetch"

// maxRedirects is how many redirects one request may follow; one more
// fails with ErrTooManyRedirects.
const maxRedirects = 10

// defaultHTTPClient reads the proxy variables when it is made (not once
// per process, as http.ProxyFromEnvironment does) and gives up on a server
// that sends no headers for 30 seconds.
func defaultHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	proxy := httpproxy.FromEnvironment().ProxyFunc()
	t.Proxy = func(r *http.Request) (*url.URL, error) { return proxy(r.URL) }
	t.ResponseHeaderTimeout = 30 * time.Second
	return &http.Client{Transport: t}
}

// httpClient returns the client a fetch uses: a copy of base (or, when
// base is nil, a new default client) with the redirect policy, and a
// release function that closes the idle connections of a client made
// here. base itself is never changed.
func httpClient(base *http.Client) (*http.Client, func()) {
	release := func() {}
	if base == nil {
		base = defaultHTTPClient()
		release = base.CloseIdleConnections
	}
	c := *base
	c.CheckRedirect = redirectPolicy(base.CheckRedirect)
	return &c, release
}

// registryHTTPClient is httpClient with oras-go's retry transport (5xx,
// 408, 429 and dial timeouts, with backoff) under the redirect policy.
func registryHTTPClient(base *http.Client) (*http.Client, func()) {
	c, release := httpClient(base)
	c.Transport = retry.NewTransport(c.Transport)
	return c, release
}

// redirectPolicy refuses a redirect from https to http (ErrInsecure) and
// more than maxRedirects redirects (ErrTooManyRedirects), then asks next,
// the caller's own policy, when there is one.
func redirectPolicy(next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		prev := via[len(via)-1]
		if strings.EqualFold(prev.URL.Scheme, "https") && !strings.EqualFold(req.URL.Scheme, "https") {
			return fmt.Errorf("%w: redirect from https to %s: %s → %s", ErrInsecure, req.URL.Scheme, hop(prev.URL), hop(req.URL))
		}
		if len(via) > maxRedirects {
			return fmt.Errorf("%w: more than %d, the last %s → %s", ErrTooManyRedirects, maxRedirects, hop(prev.URL), hop(req.URL))
		}
		if next != nil {
			return next(req, via)
		}
		return nil
	}
}

// hop names a URL in an error: scheme, host and path, without user
// information or query (a storage redirect's query often carries a
// signature that grants access).
func hop(u *url.URL) string {
	v := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	return v.String()
}

// redactURLError drops the query of the URL that a *url.Error in err
// names (the target of a refused redirect, say), as hop does: errors end
// up in logs and in object status.
func redactURLError(err error) error {
	if err == nil {
		return nil
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			ue.URL = hop(u)
		}
	}
	return err
}

// LocalRegistry reports whether host (a registry's host or host:port) is
// loopback or cluster-local, the only registries plain HTTP is allowed to
// without OCIFetcher.Insecure:
//
//   - localhost, 127.0.0.0/8 and ::1 (bracketed with a port, or bare):
//     traffic never leaves the node;
//   - names ending in .svc, .svc.cluster.local or .cluster.local: a
//     Service resolved by the cluster's DNS. No public DNS name ends so
//     (svc is no top-level domain, .local is reserved for the link), so
//     such a name is only as trustworthy as the resolver that answers it:
//     the cluster's DNS from a pod.
//
// A Service name under a custom cluster domain (.svc.example.internal) is
// not recognised: "*.svc.<anything>" would also accept public names such as
// evil.svc.example.com, which anyone can register. Neither are private
// addresses (10.0.0.0/8, 192.168.0.0/16, ...) or single-label names: a
// private address says nothing about who else is on the path (another
// tenant of the VPC, the office network, a VPN), and cannot be told apart
// from a registry outside the cluster. Such registries need Insecure.
func LocalRegistry(host string) bool {
	h := host
	if name, _, err := net.SplitHostPort(host); err == nil {
		h = name
	} else if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if ip, err := netip.ParseAddr(h); err == nil {
		return ip.Unmap().IsLoopback()
	}
	if h == "localhost" {
		return true
	}
	// .cluster.local covers .svc.cluster.local.
	for _, suffix := range []string{".svc", ".cluster.local"} {
		if name, ok := strings.CutSuffix(h, suffix); ok && name != "" && !strings.HasSuffix(name, ".") {
			return true
		}
	}
	return false
}
