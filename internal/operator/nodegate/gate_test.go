package nodegate

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shimkit/shimkit/internal/operator/jobview"
)

func gateJob(name, shim, node string, done bool, created time.Time) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{jobview.LabelShim: shim, jobview.LabelNode: node}, CreationTimestamp: metav1.NewTime(created)}}
	j.Spec.Template.Spec.NodeName = node
	if done {
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	}
	return j
}

// TestNodeGate: one installer per node across Shims, a cap on nodes at
// once, holds learnt from the Jobs cache (after a restart) and kept while
// the cache lags behind a Job just created.
func TestNodeGate(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	g := &Gate{max: 2}
	if !g.Reserve(Reservation{Node: "n1", Shim: "a", Job: "a-n1"}, now) {
		t.Fatal("a cannot take a free node")
	}
	if !g.Reserve(Reservation{Node: "n1", Shim: "a", Job: "a-n1"}, now) {
		t.Fatal("a cannot take its own node again")
	}
	if g.Reserve(Reservation{Node: "n1", Shim: "b", Job: "b-n1"}, now) {
		t.Error("b took n1 while a's installer runs there")
	}
	if !g.Reserve(Reservation{Node: "n2", Shim: "b", Job: "b-n2"}, now) {
		t.Error("b cannot take a free node under the cap")
	}
	if g.Reserve(Reservation{Node: "n3", Shim: "b", Job: "b-n3"}, now) {
		t.Error("a third node past the cap of 2")
	}
	// The cache does not show a-n1 yet (lag): the hold stays.
	g.Sync(nil, now.Add(10*time.Second))
	if g.Reserve(Reservation{Node: "n1", Shim: "b", Job: "b-n1"}, now) {
		t.Error("a hold was dropped while the cache lags")
	}
	// a-n1 finished; b-n2 runs.
	g.Sync([]*batchv1.Job{gateJob("a-n1", "a", "n1", true, now), gateJob("b-n2", "b", "n2", false, now)}, now.Add(20*time.Second))
	if !g.Reserve(Reservation{Node: "n1", Shim: "b", Job: "b-n1"}, now) {
		t.Error("n1 not free after a's Job finished")
	}
	g.Release("n1", "b-n1")
	// A restarted operator learns running Jobs from the cache.
	fresh := &Gate{}
	fresh.Sync([]*batchv1.Job{gateJob("c-n4", "c", "n4", false, now)}, now)
	if fresh.Reserve(Reservation{Node: "n4", Shim: "d", Job: "d-n4"}, now) {
		t.Error("a restarted gate let d onto c's node")
	}
	// A hold never seen in the cache expires.
	g.Sync(nil, now.Add(2*Grace))
	if len(g.held) != 0 {
		t.Errorf("holds left: %v", g.held)
	}
}
