package operator

import (
	"context"
	"strings"
	"testing"
	"time"

	kittest "github.com/shimkit/shimkit/internal/testutil"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/metrics"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestMetricsFinishedJobsCountedOnce: the Jobs decide.Finished records
// count once, however many reconciles see them, and not again after a
// restart of the operator (the node's record says they were recorded).
func TestMetricsFinishedJobsCountedOnce(t *testing.T) {
	ctx := context.Background()
	shim := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "spin", UID: "shim-uid"}}
	nodes := []string{"ok", "bad", "checked"}
	b := fake.NewClientBuilder()
	for _, n := range nodes {
		b = b.WithObjects(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	c := b.Build()
	jobs := func() map[string]*jobview.View {
		install := kittest.FinishedJob("j-ok", jobview.OpInstall, false, &plan.NodeResult{Outcome: plan.Succeeded, Runtime: plan.RuntimeContainerd, Restarted: true, Duration: plan.Duration(9 * time.Second)})
		failed := kittest.FinishedJob("j-bad", jobview.OpInstall, true, &plan.NodeResult{Outcome: plan.RolledBack, Reason: plan.ReasonRestartFailed, Runtime: plan.RuntimeCRIO, Restarted: true, Duration: plan.Duration(60 * time.Second)})
		verify := kittest.FinishedJob("j-checked", jobview.OpVerify, false, &plan.NodeResult{Outcome: plan.Succeeded, Drift: []string{"not installed"}})
		for i, j := range []*jobview.View{install, failed, verify} {
			j.SpecHash = "h1"
			j.Object.Name = "job-" + nodes[i]
		}
		return map[string]*jobview.View{"ok": install, "bad": failed, "checked": verify}
	}
	reconcile := func(r *Reconciler) {
		t.Helper()
		obs := &observed{Shim: shim, Hash: "h1", SpecHash: "h1"}
		for name, j := range jobs() {
			var n corev1.Node
			if err := c.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
				t.Fatal(err)
			}
			v := decide.NodeViewOf(shim, &n, "")
			if j.Op == jobview.OpVerify {
				v.Verify = j
			} else {
				v.Job = j
			}
			obs.Views = append(obs.Views, v)
		}
		obs.Now = time.Now()
		if err := r.reads.ReadFinished(ctx, obs); err != nil {
			t.Fatal(err)
		}
		if err := r.exec.act(ctx, newActing(obs), decide.Finished(obs)); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewPedanticRegistry()
	for restart := range 2 {
		r := withDeps(deps{client: c, reader: c, metrics: metrics.New()})
		if err := r.metrics.Register(reg); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			reconcile(r)
		}
		want := `
# HELP shimkit_runtime_restarts_total Restarts of a node's container runtime (containerd, CRI-O) by an installer Job of the Shim.
# TYPE shimkit_runtime_restarts_total counter
shimkit_runtime_restarts_total{runtime="containerd",shim="spin"} 1
shimkit_runtime_restarts_total{runtime="cri-o",shim="spin"} 1
# HELP shimkit_node_failures_total Installer Jobs that failed on a node, by operation and failure reason.
# TYPE shimkit_node_failures_total counter
shimkit_node_failures_total{op="install",reason="RestartFailed",shim="spin"} 1
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "shimkit_runtime_restarts_total", "shimkit_node_failures_total"); err != nil {
			t.Errorf("after restart %d: %v", restart, err)
		}
		for _, labels := range []map[string]string{
			{"op": "install", "result": "succeeded"},
			{"op": "install", "result": "failed", "reason": "RestartFailed"},
			{"op": "verify", "result": "succeeded"},
		} {
			if _, count := kittest.HistogramSumCount(t, reg, "shimkit_node_operation_duration_seconds", labels); count != 1 {
				t.Errorf("after restart %d: %v counted %d times, want 1", restart, labels, count)
			}
		}
	}
}
