package plugin

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
)

// Verbosity levels of -v that log the API requests, as kubectl's do: 6
// each request's verb, URL, status and time; 7 its headers too (the
// credentials left out).
const (
	verbosityRequests = 6
	verbosityHeaders  = 7
)

// addVerbosityFlag adds kubectl's -v/--v to every command, and logs the
// requests to the cluster at its levels on the error stream.
func (o *options) addVerbosityFlag(root *cobra.Command) {
	root.PersistentFlags().IntVarP(&o.verbosity, "v", "v", 0, "number for the log level verbosity: 6 logs each request to the API server (verb, URL, status, time), 7 its headers too")
	o.config.WrapConfigFn = func(c *rest.Config) *rest.Config {
		if o.verbosity >= verbosityRequests {
			c.Wrap(func(rt http.RoundTripper) http.RoundTripper {
				return &requestLog{next: rt, w: o.streams.ErrOut, headers: o.verbosity >= verbosityHeaders}
			})
		}
		return c
	}
}

// requestLog writes a line per request (and its headers at 7).
type requestLog struct {
	next    http.RoundTripper
	headers bool
	mu      sync.Mutex // one line at a time: requests may run at once
	w       io.Writer
}

func (l *requestLog) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := l.next.RoundTrip(req)
	took := time.Since(start).Milliseconds()
	var b strings.Builder
	switch {
	case err != nil:
		fmt.Fprintf(&b, "%s %s: %v in %d ms\n", req.Method, req.URL, err, took)
	default:
		fmt.Fprintf(&b, "%s %s %s in %d ms\n", req.Method, req.URL, resp.Status, took)
	}
	if l.headers {
		writeHeaders(&b, req.Header)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = io.WriteString(l.w, b.String())
	return resp, err
}

// WrappedRoundTripper lets client-go cancel a request through the log.
func (l *requestLog) WrappedRoundTripper() http.RoundTripper { return l.next }

// writeHeaders writes the request's headers, sorted, without credentials.
func writeHeaders(b *strings.Builder, h http.Header) {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := strings.Join(h[k], ", ")
		if strings.EqualFold(k, "Authorization") || strings.EqualFold(k, "Cookie") {
			v = "<masked>"
		}
		fmt.Fprintf(b, "    %s: %s\n", k, v)
	}
}
