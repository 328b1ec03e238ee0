package decide

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestReplacing: a start whose Job name a finished Job of the snapshot
// has replaces that Job (the executor deletes it first, by UID); a
// running one of the name, or another name, is replaced by none.
func TestReplacing(t *testing.T) {
	shim := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "spin"}}
	job := func(node, op, hash string, done bool) *batchv1.Job {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: jobview.JobName("spin", node, op, hash), UID: types.UID("uid-" + node)}}
		if done {
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
		} else {
			j.Status.Active = 1
		}
		return j
	}
	obs := &Snapshot{Shim: shim, Jobs: []*batchv1.Job{job("done", jobview.OpInstall, "h1", true), job("running", jobview.OpInstall, "h1", false), job("other", jobview.OpInstall, "h0", true)}}
	start := func(node string) Start {
		return Start{View: &NodeView{Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}}, Op: jobview.OpInstall, Hash: "h1"}
	}
	starts := []Start{start("done"), start("running"), start("other"), start("fresh")}
	replacing(obs, starts)
	for i, want := range []string{"uid-done", "", "", ""} {
		got := ""
		if r := starts[i].Replaces; r != nil {
			got = string(r.UID)
		}
		if got != want {
			t.Errorf("%s: replaces %q, want %q", starts[i].View.Node.Name, got, want)
		}
	}
}
