package operator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// batchShims creates Shims of the fleet's nodes, each with a shim archive
// served by srv (a name in missing gets a URL that answers 404).
func batchShims(t *testing.T, c client.Client, srv *testutil.FileServer, names []string, missing ...string) {
	t.Helper()
	for _, name := range names {
		art := testutil.NewShimArchive(t, name, "/bin/true", nil)
		url := srv.Add("/"+name+".tar.gz", art.Data)
		if slices.Contains(missing, name) {
			url += ".missing"
		}
		s := pinShim(name, v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{Location: url, SHA256: art.SHA256}})
		if err := c.Create(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
}

// installJobs returns the install Jobs of every Shim by node, and the
// Shims each one carries (its members annotation, or its one Shim).
func installJobs(t *testing.T, c client.Client) map[string][][]string {
	t.Helper()
	var jobs batchv1.JobList
	if err := c.List(context.Background(), &jobs, client.InNamespace(jobNamespace)); err != nil {
		t.Fatal(err)
	}
	out := map[string][][]string{}
	for _, j := range jobs.Items {
		if j.Labels["shim.containerd.x-k8s.io/op"] != "install" {
			continue
		}
		shims := []string{j.Labels["shim.containerd.x-k8s.io/shim"]}
		if raw := j.Annotations["shim.containerd.x-k8s.io/members"]; raw != "" {
			var ms []struct{ Shim string }
			if err := json.Unmarshal([]byte(raw), &ms); err != nil {
				t.Fatalf("Job %s: members %q: %v", j.Name, raw, err)
			}
			shims = nil
			for _, m := range ms {
				shims = append(shims, m.Shim)
			}
			slices.Sort(shims)
		}
		node := j.Spec.Template.Spec.NodeName
		out[node] = append(out[node], shims)
	}
	return out
}

// TestBatchOneInstallerRunPerNode: two Shims created together on three
// nodes (maxUpdate 1 each) are installed by one Job per node carrying both
// plans (a NodePlanList); the real installer puts both handlers into each
// node's config in that one run, and both Shims are Ready.
func TestBatchOneInstallerRunPerNode(t *testing.T) {
	env := startCluster(t)
	f := startFleet(t, env, 3)
	startOperator(t, env)
	batchShims(t, env.Client, testutil.StartFileServer(t), []string{"alpha", "beta"})
	waitFor(t, 90*time.Second, "alpha Ready", ready(env.Client, "alpha"))
	waitFor(t, 30*time.Second, "beta Ready", ready(env.Client, "beta"))

	for node, jobs := range installJobs(t, env.Client) {
		if len(jobs) != 1 || !slices.Equal(jobs[0], []string{"alpha", "beta"}) {
			t.Errorf("node %s: install Jobs carrying %v, want one carrying alpha and beta", node, jobs)
		}
	}
	for i := range 3 {
		cfg := filepath.Join(f.root(nodeName(i)), "etc/containerd/config.toml")
		data, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		c, err := containerdconfig.Parse(cfg, data)
		if err != nil || !c.HasHandler("alpha") || !c.HasHandler("beta") {
			t.Errorf("node %s: %v\n%s", nodeName(i), err, data)
		}
	}
	for _, name := range []string{"alpha", "beta"} {
		if got := len(nodesWith(t, env.Client, name)); got != 3 {
			t.Errorf("%s on %d nodes, want 3", name, got)
		}
	}

	// A node that joins later gets both Shims from one installer run too:
	// the first Shim to see it waits for the other, which selects it and
	// has never installed it.
	joined := "pin-joined-0000"
	f.prepare(t, joined)
	createNodes(t, env.Client, 1, map[string]string{"pin": "true"}, "pin-joined")
	for _, name := range []string{"alpha", "beta"} {
		waitFor(t, 60*time.Second, name+" on the joined node", func() (bool, string) {
			got := nodesWith(t, env.Client, name)
			_, ok := got[joined]
			return ok, fmt.Sprint(got)
		})
	}
	if jobs := installJobs(t, env.Client)[joined]; len(jobs) != 1 || !slices.Equal(jobs[0], []string{"alpha", "beta"}) {
		t.Errorf("joined node: install Jobs carrying %v, want one carrying alpha and beta", jobs)
	}
}

// TestBatchSiblingRetriedAlone: when one Shim's plan of a batch fails (its
// artifact is missing), the real installer reports it FetchFailed and the
// other SiblingFailed; the failing Shim halts after that one node, the
// other is installed there again alone (a Normal RetryAlone event, no
// failure recorded) and goes on to every node.
func TestBatchSiblingRetriedAlone(t *testing.T) {
	env := startCluster(t)
	startFleet(t, env, 3)
	startOperator(t, env)
	batchShims(t, env.Client, testutil.StartFileServer(t), []string{"alpha", "beta"}, "beta")
	waitFor(t, 90*time.Second, "alpha Ready", ready(env.Client, "alpha"))
	waitFor(t, 30*time.Second, "beta failing on one node", func() (bool, string) {
		s := getShim(t, env.Client, "beta")
		return len(s.Status.FailingNodes) == 1, fmt.Sprintf("%+v", s.Status)
	})

	beta := getShim(t, env.Client, "beta").Status.FailingNodes[0]
	if beta.Reason != string(plan.ReasonFetchFailed) {
		t.Errorf("beta's failure: %+v, want FetchFailed", beta)
	}
	if got := len(nodesWith(t, env.Client, "alpha")); got != 3 {
		t.Errorf("alpha on %d nodes, want 3", got)
	}
	if fs := getShim(t, env.Client, "alpha").Status.FailingNodes; len(fs) != 0 {
		t.Errorf("alpha failing: %+v", fs)
	}
	jobs := installJobs(t, env.Client)
	for node, js := range jobs {
		want := [][]string{{"alpha"}}
		if node == beta.Node {
			want = [][]string{{"alpha", "beta"}, {"alpha"}}
		}
		slices.SortFunc(js, func(a, b []string) int { return len(b) - len(a) })
		if !slices.EqualFunc(js, want, slices.Equal) {
			t.Errorf("node %s: install Jobs carrying %v, want %v", node, js, want)
		}
	}
	notes := eventNotes(t, env.Client, "alpha", corev1.EventTypeNormal)
	if !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, "installing this one again, alone") }) {
		t.Errorf("alpha's Normal events lack RetryAlone: %q", notes)
	}
}
