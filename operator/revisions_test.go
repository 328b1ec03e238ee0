package operator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestRevisionHistory: each spec that reached every node is a revision;
// the status keeps the newest five and their ControllerRevisions, the
// older ones are deleted; and going back by hand as the README shows it
// (the revision's spec read with kubectl's jsonpath, put back as the
// spec) rolls the old spec out again, its revision first again, with no
// new ControllerRevision.
func TestRevisionHistory(t *testing.T) {
	env := startCluster(t)
	kubectl := kubectlFor(t, env)
	ctx := context.Background()
	createNodes(t, env.Client, 2, nil, "h")
	startKubelet(t, env, 50*time.Millisecond, func(*batchv1.Job) bool { return false })
	startOperator(t, env)

	shim := newShim("hist", "hist", "100%", nil)
	if err := env.Client.Create(ctx, shim); err != nil {
		t.Fatal(err)
	}
	var hashes []string // oldest first
	for v := 1; v <= 7; v++ {
		if v > 1 {
			updateShim(t, env.Client, "hist", func(s *v1alpha1.Shim) {
				s.Spec.FetchStrategy.AnonHTTP.Location = fmt.Sprintf("https://artifacts.invalid/hist-v%d.tar.gz", v)
			})
		}
		stage(t, env.Client, kubectl, "hist", fmt.Sprintf("v%d rolled out", v), status.CurrentStatus, "")
		hashes = append(hashes, getShim(t, env.Client, "hist").Status.SpecHash)
	}
	revs := getShim(t, env.Client, "hist").Status.Revisions
	if len(revs) != 5 {
		t.Fatalf("%d revisions in the status, want 5: %+v", len(revs), revs)
	}
	for i, r := range revs {
		if want := hashes[len(hashes)-1-i]; r.SpecHash != want {
			t.Errorf("revision %d: spec %s, want %s (newest first)", i, r.SpecHash, want)
		}
	}
	if got := revisionNames(t, env.Client); len(got) != 5 || !sameSet(got, revs) {
		t.Errorf("ControllerRevisions %v; want exactly the status's five", got)
	}

	// Back to v4 by hand: its spec as kubectl prints it, the Shim's spec
	// replaced with it.
	v4 := revs[3]
	out, err := kubectl("-n", jobNamespace, "get", "controllerrevision", v4.ControllerRevision, "-o", "jsonpath={.data.spec}")
	if err != nil {
		t.Fatalf("kubectl get controllerrevision: %v: %s", err, out)
	}
	var spec v1alpha1.ShimSpec
	if err := json.Unmarshal([]byte(out), &spec); err != nil {
		t.Fatalf("the revision's spec %q: %v", out, err)
	}
	updateShim(t, env.Client, "hist", func(s *v1alpha1.Shim) { s.Spec = spec })
	stage(t, env.Client, kubectl, "hist", "v4 again", status.CurrentStatus, "")
	s := getShim(t, env.Client, "hist")
	if s.Status.SpecHash != v4.SpecHash || s.Status.Revisions[0].SpecHash != v4.SpecHash || len(s.Status.Revisions) != 5 {
		t.Errorf("after going back: spec %s, revisions %+v; want %s first of five", s.Status.SpecHash, s.Status.Revisions, v4.SpecHash)
	}
	if got := revisionNames(t, env.Client); !sameSet(got, s.Status.Revisions) {
		t.Errorf("ControllerRevisions %v after going back; want the status's", got)
	}
	assertAt(t, env, "hist", v4.SpecHash, 2)
}

// revisionNames lists the names of the ControllerRevisions of Shims.
func revisionNames(t *testing.T, c client.Client) []string {
	t.Helper()
	crs := &appsv1.ControllerRevisionList{}
	if err := c.List(context.Background(), crs, client.InNamespace(jobNamespace), client.HasLabels{jobview.LabelShim}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, cr := range crs.Items {
		names = append(names, cr.Name)
	}
	return names
}

// sameSet tells whether names are exactly the revisions' ControllerRevisions.
func sameSet(names []string, revs []v1alpha1.Revision) bool {
	if len(names) != len(revs) {
		return false
	}
	want := map[string]bool{}
	for _, r := range revs {
		want[r.ControllerRevision] = true
	}
	for _, n := range names {
		if !want[n] {
			return false
		}
	}
	return true
}
