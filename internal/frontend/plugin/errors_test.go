package plugin_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/shimkit/shimkit/internal/frontend/plugin"
)

// servers answer as the places a kubeconfig may wrongly point to: one
// that never answers, a proxy that finds nothing (404 for /api), a
// Kubernetes API server without the Shim API, and a port nothing listens
// on.
func servers(t *testing.T) (hang, notFound, noCRD, refused string) {
	t.Helper()
	block := make(chan struct{})
	h := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-block }))
	t.Cleanup(func() { close(block); h.Close() })
	nf := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(nf.Close)
	nc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api":
			_, _ = w.Write([]byte(`{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[]}`))
		case "/apis":
			_, _ = w.Write([]byte(`{"kind":"APIGroupList","apiVersion":"v1","groups":[]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(nc.Close)
	return h.URL, nf.URL, nc.URL, "http://127.0.0.1:1"
}

// kubeconfigFor writes a kubeconfig whose context lab names server.
func kubeconfigFor(t *testing.T, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	data := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"" + server + "\"}}]\nusers: [{name: u, user: {token: secret-token}}]\ncontexts: [{name: lab, context: {cluster: c, user: u}}]\ncurrent-context: lab\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestErrorsNameOneCause: each way a cluster cannot be used is told by
// one cause, naming the context, for every command that reads (a file's
// plan is not "refused" by a server that never saw it).
func TestErrorsNameOneCause(t *testing.T) {
	hang, notFound, noCRD, refused := servers(t)
	shim := filepath.Join(t.TempDir(), "spin.yaml")
	if err := os.WriteFile(shim, []byte("apiVersion: containerd.x-k8s.io/v1alpha1\nkind: Shim\nmetadata: {name: spin}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	causes := []string{"did not answer in time", "nothing listens at", "is not a Kubernetes API server", "is not installed", "refuses it"}
	for _, tc := range []struct{ server, want string }{
		{hang, `the cluster of context "lab" did not answer in time (--request-timeout 1s)`},
		{refused, `cannot reach the cluster of context "lab": nothing listens at http://127.0.0.1:1`},
		{notFound, `the server of context "lab" (` + notFound + `) is not a Kubernetes API server: it answers 404 for /api`},
		{noCRD, `the Shim API (shims.containerd.x-k8s.io) is not installed in the cluster of context "lab"`},
	} {
		for _, args := range [][]string{{"status", "spin"}, {"plan", "-f", shim}, {"boot-plan"}} {
			var out, errOut bytes.Buffer
			code := plugin.Run(context.Background(), append(args, "--kubeconfig", kubeconfigFor(t, tc.server), "--request-timeout", "1s"), genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
			msg := errOut.String()
			named := 0
			for _, c := range causes {
				if strings.Contains(msg, c) {
					named++
				}
			}
			if code != plugin.ExitFailed || !strings.Contains(msg, tc.want) || named != 1 {
				t.Errorf("%s %v: exit %d, %q; want one cause: %q", tc.server, args, code, msg, tc.want)
			}
		}
	}
}

// TestVerbosityLogsRequests: -v 6 logs each request with its status and
// time, -v 7 its headers too, never the credentials (client-go adds them
// beneath the log; a header that carries some is masked); -v is not
// --version.
func TestVerbosityLogsRequests(t *testing.T) {
	_, _, noCRD, _ := servers(t)
	kubeconfig := kubeconfigFor(t, noCRD)
	run := func(args ...string) string {
		var out, errOut bytes.Buffer
		plugin.Run(context.Background(), append(args, "--kubeconfig", kubeconfig), genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		return errOut.String()
	}
	if log := run("status", "spin", "-v", "6"); !strings.Contains(log, "GET "+noCRD+"/api 200 OK in ") || !strings.Contains(log, " 200 OK in ") || strings.Contains(log, "Authorization") {
		t.Errorf("-v 6:\n%s", log)
	}
	if log := run("status", "spin", "--v=7"); !strings.Contains(log, "\n    User-Agent: ") || strings.Contains(log, "secret-token") {
		t.Errorf("--v=7:\n%s", log)
	}
	if log := run("status", "spin"); strings.Contains(log, "GET ") {
		t.Errorf("no -v: requests logged:\n%s", log)
	}
	var out, errOut bytes.Buffer
	if code := plugin.Run(context.Background(), []string{"-v"}, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}); code != plugin.ExitUsage || !strings.Contains(errOut.String(), "flag needs an argument: 'v' in -v") {
		t.Errorf("-v alone: exit %d, %q %q; want the verbosity's missing level, not the version", code, out.String(), errOut.String())
	}
}
