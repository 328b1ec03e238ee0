package plugin_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/shimkit/shimkit/internal/frontend/plugin"
)

// run runs kubectl shimkit with no cluster: a kubeconfig that names none.
func run(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := plugin.Run(context.Background(), append(args, "--kubeconfig", "/nonexistent/kubeconfig"), genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	return code, out.String(), errOut.String()
}

// TestHelp: every command's --help exits 0 and lists its own flags.
func TestHelp(t *testing.T) {
	for _, tc := range []struct {
		cmd   []string
		flags []string
	}{
		{nil, []string{"--version"}},
		{[]string{"status"}, []string{"--output", "--watch"}},
		{[]string{"plan"}, []string{"--filename", "--delete", "--exit-code", "--output"}},
		{[]string{"logs"}, []string{"--node", "--previous", "--follow"}},
		{[]string{"pause"}, nil},
		{[]string{"resume"}, nil},
		{[]string{"rerun"}, []string{"--node", "--force"}},
		{[]string{"options"}, []string{"--kubeconfig", "--context", "--namespace", "--as", "--request-timeout"}},
	} {
		args := append(tc.cmd, "--help")
		if tc.cmd != nil && tc.cmd[0] == "options" {
			args = tc.cmd
		}
		code, out, errOut := run(args...)
		if code != plugin.ExitOK || errOut != "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
		for _, f := range tc.flags {
			if !strings.Contains(out, f) {
				t.Errorf("%v: no %s in\n%s", args, f, out)
			}
		}
	}
}

// TestBadCommandLines: a wrong command line exits ExitUsage, naming what
// is wrong, before any request (the kubeconfig names no cluster).
func TestBadCommandLines(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "spin", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"plan", "spin", "-x"}, "unknown shorthand flag: 'x'"},
		{[]string{"status", "spin", "-o", "xml"}, "-o xml: want one of wide|name|json|yaml"},
		{[]string{"plan", "spin", "-o", "name"}, "-o name: want one of wide|json|yaml"},
		{[]string{"status", "spin", "-o", "jsonpath={.nodes"}, "-o jsonpath={.nodes: error parsing jsonpath"},
		{[]string{"status"}, "want the Shim's NAME"},
		{[]string{"status", "a", "b"}, "want the Shim's NAME, got 2 arguments"},
		{[]string{"plan"}, "want the Shim's NAME or -f FILE"},
		{[]string{"plan", "spin", "-f", "spin.yaml"}, "want the Shim's NAME or -f FILE"},
		{[]string{"plan", "--delete", "-f", "spin.yaml"}, "--delete wants the Shim's NAME, without -f"},
		{[]string{"logs", "spin"}, "--node is required"},
		{[]string{"rerun", "spin"}, "--node is required"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"status", "spin", "--watch=maybe"}, `invalid argument "maybe" for "-w, --watch"`},
	} {
		code, out, errOut := run(tc.args...)
		if code != plugin.ExitUsage || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d naming %q", tc.args, code, out, errOut, plugin.ExitUsage, tc.want)
		}
	}
}

// TestFailureExitCode: a command that cannot be done (here: no
// kubeconfig) exits ExitFailed, above plan --exit-code's 1.
func TestFailureExitCode(t *testing.T) {
	code, _, errOut := run("plan", "spin", "--exit-code")
	if code != plugin.ExitFailed || !strings.Contains(errOut, "/nonexistent/kubeconfig") {
		t.Errorf("exit %d, %q", code, errOut)
	}
	if code, out, _ := run("--version"); code != plugin.ExitOK || !strings.HasPrefix(out, "kubectl-shimkit ") {
		t.Errorf("--version: exit %d, %q", code, out)
	}
}

// TestDetailedExitCodeErrors: with plan --detailed-exitcode every error
// exits 1, terraform's code: a failure, a wrong flag (also one that stops
// the command line from being parsed) and both code flags at once.
func TestDetailedExitCodeErrors(t *testing.T) {
	for _, args := range [][]string{
		{"plan", "spin", "--detailed-exitcode"},                // no kubeconfig: a failure
		{"plan", "spin", "--detailed-exitcode", "--bogus"},     // an unknown flag
		{"plan", "--detailed-exitcode", "spin", "-o", "xml"},   // a bad -o
		{"plan", "spin", "--detailed-exitcode", "--exit-code"}, // both
		{"plan", "--detailed-exitcode=true"},                   // no NAME
	} {
		if code, _, errOut := run(args...); code != plugin.ExitDetailedError || errOut == "" {
			t.Errorf("%v: exit %d, stderr %q; want %d", args, code, errOut, plugin.ExitDetailedError)
		}
	}
	if code, _, _ := run("plan", "--bogus", "--detailed-exitcode=false"); code != plugin.ExitUsage {
		t.Errorf("--detailed-exitcode=false: exit %d, want %d", code, plugin.ExitUsage)
	}
}

// TestUnreachableClusterNamesContext: a cluster that does not answer is
// a failure naming the kubeconfig context.
func TestUnreachableClusterNamesContext(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: lab, context: {cluster: c, user: u}}, {name: prod, context: {cluster: c, user: u}}]
current-context: lab
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		ctx  string
	}{
		{[]string{"status", "spin"}, "lab"},
		{[]string{"plan", "spin", "--context", "prod"}, "prod"},
	} {
		var out, errOut bytes.Buffer
		code := plugin.Run(context.Background(), append(tc.args, "--kubeconfig", kubeconfig, "--request-timeout", "5s"), genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		if code != plugin.ExitFailed || !strings.Contains(errOut.String(), `cannot reach the cluster of context "`+tc.ctx+`"`) {
			t.Errorf("%v: exit %d, %q; want a failure naming context %s", tc.args, code, errOut.String(), tc.ctx)
		}
	}
}
