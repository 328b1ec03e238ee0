package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// dumper tells what the cluster looked like when a test failed, in a file
// the test's log names on one line: a short account first (the Shims'
// conditions and failures, the shimkit pods, the warnings), then the
// rest (every node's kubelet journal, the pods' logs). The test's log
// keeps its own failures last, where a CI log's tail shows them (an
// account there pushed them out of it). The first failing test dumps;
// the tests above it that fail with it do not say it again.
type dumper struct {
	c    *testutil.Cluster
	done atomic.Bool
}

// onFailure dumps when t has failed, at its end: call it once the nodes
// it looks at have joined (they leave at t's end, before this runs for
// nodes joined earlier).
func (d *dumper) onFailure(t *testing.T) {
	t.Cleanup(func() {
		if !t.Failed() || d.done.Swap(true) {
			return
		}
		dir, err := os.MkdirTemp("", "shimkit-e2e-dump-")
		if err != nil {
			t.Logf("dump: %v", err)
			return
		}
		path := filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_")+".txt")
		if err := os.WriteFile(path, append([]byte(d.summary()), d.full()...), 0o644); err != nil {
			t.Logf("dump: %v", err)
			return
		}
		t.Logf("the cluster at the failure (Shims, pods, warnings, journals, pod logs): %s", path)
	})
}

// summary is the short account: a line per Shim condition, failing and
// skipped node, the shimkit pods and Jobs, the last warnings.
func (d *dumper) summary() string {
	var b strings.Builder
	shims := &v1alpha1.ShimList{}
	if err := d.c.Client.List(context.Background(), shims); err != nil {
		fmt.Fprintf(&b, "shims: %v\n", err)
	}
	for _, s := range shims.Items {
		fmt.Fprintf(&b, "shim %s (generation %d, observed %d): %d/%d nodes updated\n", s.Name, s.Generation, s.Status.ObservedGeneration, s.Status.UpdatedNodes, s.Status.Nodes)
		for _, c := range s.Status.Conditions {
			fmt.Fprintf(&b, "  %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
		}
		for _, f := range s.Status.FailingNodes {
			fmt.Fprintf(&b, "  failing %s %s: %s\n", f.Node, f.Reason, f.Message)
		}
		for _, sk := range s.Status.Skipped {
			fmt.Fprintf(&b, "  skipped %s: %v\n", sk.Reason, sk.Nodes)
		}
	}
	b.Write(d.kubectl("-n", "shimkit-system", "get", "jobs,pods", "-o", "wide"))
	// (Not the kubelets' advisories on every pod and node of the harness.)
	warnings := d.kubectl("get", "events", "-A", "--field-selector", "type=Warning,reason!=MissingClusterDNS,reason!=CgroupV1", "--sort-by=.metadata.creationTimestamp")
	if lines := bytes.Split(bytes.TrimSpace(warnings), []byte("\n")); len(lines) > 20 {
		warnings = bytes.Join(lines[len(lines)-20:], []byte("\n"))
	}
	b.Write(warnings)
	b.WriteString("\n")
	return b.String()
}

// full is the rest, after the summary (which lists the Jobs and pods):
// the Shims and every event, the operator's log (its end), each node's
// kubelet journal and every pod's log (its end).
func (d *dumper) full() []byte {
	var b bytes.Buffer
	for _, args := range [][]string{
		{"get", "shims", "-o", "yaml"},
		{"get", "events", "-A", "--sort-by=.metadata.creationTimestamp"},
		// The operator's errors (a reconcile that failed, and was retried
		// with a backoff) say why a Shim did not move.
		{"-n", "shimkit-system", "logs", "deployment/shimkit-operator", "--tail=500"},
	} {
		fmt.Fprintf(&b, "### kubectl %s\n%s\n", strings.Join(args, " "), d.kubectl(args...))
	}
	nodes := d.c.CurrentNodes()
	for _, n := range nodes {
		fmt.Fprintf(&b, "### %s %s\n%s\n", n.Name, n.KubeletUnit(), n.Journal(n.KubeletUnit()))
	}
	// Container logs, read on the nodes (the API server cannot resolve
	// the nodes' names to reach their kubelets).
	for _, n := range nodes {
		logs, _ := filepath.Glob(n.Local("/var/log/pods/*/*/*.log"))
		for _, l := range logs {
			data, _ := os.ReadFile(l)
			if len(data) > 3000 {
				data = data[len(data)-3000:]
			}
			fmt.Fprintf(&b, "### %s %s\n%s\n", n.Name, strings.TrimPrefix(l, n.Root), data)
		}
	}
	return b.Bytes()
}

func (d *dumper) kubectl(args ...string) []byte {
	out, _ := exec.Command(d.c.Kubectl, append([]string{"--kubeconfig", d.c.Kubeconfig}, args...)...).CombinedOutput()
	return out
}
