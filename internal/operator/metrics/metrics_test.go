package metrics

import (
	"strconv"
	"strings"
	"testing"
	"time"

	kittest "github.com/shimkit/shimkit/internal/testutil"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// registered returns fresh metrics registered on a fresh registry.
func registered(t *testing.T) (*Metrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	m := New()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	return m, reg
}

func gatherCount(t *testing.T, reg prometheus.Gatherer, name string) int {
	t.Helper()
	n, err := testutil.GatherAndCount(reg, name)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestMetricsRegisterTwice: a second reconciler's metrics registered on the
// same registry report through the first one's collectors.
func TestMetricsRegisterTwice(t *testing.T) {
	a, reg := registered(t)
	b := New()
	if err := b.Register(reg); err != nil {
		t.Fatalf("second Register: %v", err)
	}
	b.GateTripped("spin", "WorkloadFailures")
	b.RolloutPaused("spin", true)
	b.NodeOperation("spin", "install", resultFailed, "CanaryFailed", time.Second)
	if got := testutil.ToFloat64(a.gateTrips.WithLabelValues("spin", "WorkloadFailures")); got != 1 {
		t.Errorf("gate trips through the first collector = %v, want 1", got)
	}
	if got := testutil.ToFloat64(a.paused.WithLabelValues("spin")); got != 1 {
		t.Errorf("paused through the first collector = %v, want 1", got)
	}
	if got := testutil.ToFloat64(a.nodeFailures.WithLabelValues("spin", "install", "CanaryFailed")); got != 1 {
		t.Errorf("failures through the first collector = %v, want 1", got)
	}
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
}

// TestMetricsRegisterConflict: a collector of another type under one of the
// names is an error, not a panic.
func TestMetricsRegisterConflict(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shimkit_rollout_step", Help: "other"}, []string{"shim"}))
	if err := New().Register(reg); err == nil {
		t.Fatal("Register over a conflicting collector: no error")
	}
}

func TestMetricsNodeOperation(t *testing.T) {
	m, reg := registered(t)
	m.NodeOperation("spin", "install", resultSucceeded, "", 3*time.Second)
	m.NodeOperation("spin", "install", resultFailed, string(plan.ReasonRestartFailed), 40*time.Second)
	m.NodeOperation("spin", "install", resultFailed, string(plan.ReasonRestartFailed), 50*time.Second)
	m.NodeOperation("spin", "uninstall", resultFailed, string(plan.ReasonNodeError), time.Second)
	m.NodeOperation("spin", "verify", resultSucceeded, "", time.Second)

	want := `
# HELP shimkit_node_failures_total Installer Jobs that failed on a node, by operation and failure reason.
# TYPE shimkit_node_failures_total counter
shimkit_node_failures_total{op="install",reason="RestartFailed",shim="spin"} 2
shimkit_node_failures_total{op="uninstall",reason="NodeError",shim="spin"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "shimkit_node_failures_total"); err != nil {
		t.Error(err)
	}
	// One series per (op, result, reason): 4 histograms.
	if n := gatherCount(t, reg, "shimkit_node_operation_duration_seconds"); n != 4 {
		t.Errorf("operation duration series = %d, want 4", n)
	}
	if sum, count := kittest.HistogramSumCount(t, reg, "shimkit_node_operation_duration_seconds", map[string]string{"op": "install", "result": "failed"}); sum != 90 || count != 2 {
		t.Errorf("failed installs: sum %v count %v, want 90 and 2", sum, count)
	}
}

func TestMetricsCounters(t *testing.T) {
	m, reg := registered(t)
	m.RuntimeRestarted("spin", "containerd")
	m.RuntimeRestarted("spin", "containerd")
	m.RuntimeRestarted("kata", "containerd")
	m.DriftDetected("spin", "n1")
	m.DriftDetected("spin", "n1")
	m.DriftDetected("spin", "n2")
	m.GateTripped("spin", "WorkloadFailures")
	want := `
# HELP shimkit_runtime_restarts_total Restarts of a node's container runtime (containerd, CRI-O) by an installer Job of the Shim.
# TYPE shimkit_runtime_restarts_total counter
shimkit_runtime_restarts_total{runtime="containerd",shim="kata"} 1
shimkit_runtime_restarts_total{runtime="containerd",shim="spin"} 2
# HELP shimkit_drift_detected_total Times a node's installed shim was found to differ from what the operator installed.
# TYPE shimkit_drift_detected_total counter
shimkit_drift_detected_total{node="n1",shim="spin"} 2
shimkit_drift_detected_total{node="n2",shim="spin"} 1
# HELP shimkit_workload_gate_trips_total Times the workload gate halted a Shim's rollout, by reason.
# TYPE shimkit_workload_gate_trips_total counter
shimkit_workload_gate_trips_total{reason="WorkloadFailures",shim="spin"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "shimkit_runtime_restarts_total", "shimkit_drift_detected_total", "shimkit_workload_gate_trips_total"); err != nil {
		t.Error(err)
	}
}

// TestMetricsRolloutGauges: the step is set, and a negative one removes the
// series; paused is 0 or 1.
func TestMetricsRolloutGauges(t *testing.T) {
	m, reg := registered(t)
	m.RolloutStep("spin", 0)
	m.RolloutStep("spin", 2)
	m.RolloutStep("kata", 1)
	m.RolloutPaused("spin", true)
	m.RolloutPaused("kata", true)
	m.RolloutPaused("kata", false)
	want := `
# HELP shimkit_rollout_paused 1 when a Shim's rollout is paused, else 0.
# TYPE shimkit_rollout_paused gauge
shimkit_rollout_paused{shim="kata"} 0
shimkit_rollout_paused{shim="spin"} 1
# HELP shimkit_rollout_step 0-based index of the current step of a Shim's rollout; absent when no rollout is in progress.
# TYPE shimkit_rollout_step gauge
shimkit_rollout_step{shim="kata"} 1
shimkit_rollout_step{shim="spin"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "shimkit_rollout_step", "shimkit_rollout_paused"); err != nil {
		t.Error(err)
	}
	m.RolloutStep("kata", -1)
	m.RolloutStep("none", -1)
	if n := gatherCount(t, reg, "shimkit_rollout_step"); n != 1 {
		t.Errorf("step series after -1 = %d, want 1 (spin's)", n)
	}
}

// TestMetricsConditions: one series per status, 1 on the condition's; a
// condition type that went away loses its series.
func TestMetricsConditions(t *testing.T) {
	m, reg := registered(t)
	m.Conditions("spin", []metav1.Condition{
		{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse},
		{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue},
	})
	want := `
# HELP shimkit_shim_condition A Shim's status conditions: 1 on the series of the condition's status (True, False, Unknown), 0 on the others.
# TYPE shimkit_shim_condition gauge
shimkit_shim_condition{shim="spin",status="False",type="Degraded"} 0
shimkit_shim_condition{shim="spin",status="False",type="Ready"} 1
shimkit_shim_condition{shim="spin",status="True",type="Degraded"} 1
shimkit_shim_condition{shim="spin",status="True",type="Ready"} 0
shimkit_shim_condition{shim="spin",status="Unknown",type="Degraded"} 0
shimkit_shim_condition{shim="spin",status="Unknown",type="Ready"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "shimkit_shim_condition"); err != nil {
		t.Error(err)
	}
	m.Conditions("spin", []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue}})
	want = `
# HELP shimkit_shim_condition A Shim's status conditions: 1 on the series of the condition's status (True, False, Unknown), 0 on the others.
# TYPE shimkit_shim_condition gauge
shimkit_shim_condition{shim="spin",status="False",type="Ready"} 0
shimkit_shim_condition{shim="spin",status="True",type="Ready"} 1
shimkit_shim_condition{shim="spin",status="Unknown",type="Ready"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "shimkit_shim_condition"); err != nil {
		t.Error(err)
	}
}

// TestMetricsJobFinished: each finished Job counts once, with the
// installer's duration (else the Job's), its failure reason (else the Job
// condition's), and the runtime's restart, by runtime.
func TestMetricsJobFinished(t *testing.T) {
	m, reg := registered(t)
	ok := kittest.FinishedJob("u1", jobview.OpInstall, false, &plan.NodeResult{Outcome: plan.Succeeded, Runtime: plan.RuntimeContainerd, Restarted: true, Duration: plan.Duration(12 * time.Second)})
	canary := kittest.FinishedJob("u2", jobview.OpInstall, true, &plan.NodeResult{Outcome: plan.RolledBack, Reason: plan.ReasonCanaryFailed, Runtime: plan.RuntimeCRIO, Restarted: true, Duration: plan.Duration(30 * time.Second)})
	noResult := kittest.FinishedJob("u3", jobview.OpUninstall, true, nil)
	verify := kittest.FinishedJob("u4", jobview.OpVerify, false, &plan.NodeResult{Outcome: plan.Succeeded, Drift: []string{"not installed"}})
	for range 3 { // reconciles
		for _, j := range []*jobview.View{ok, canary, noResult, verify} {
			m.JobFinished("spin", j)
		}
	}
	m.JobFinished("kata", ok) // a batch Job: kata's part counts apart
	m.JobFinished("spin", nil)

	want := `
# HELP shimkit_runtime_restarts_total Restarts of a node's container runtime (containerd, CRI-O) by an installer Job of the Shim.
# TYPE shimkit_runtime_restarts_total counter
shimkit_runtime_restarts_total{runtime="containerd",shim="kata"} 1
shimkit_runtime_restarts_total{runtime="containerd",shim="spin"} 1
shimkit_runtime_restarts_total{runtime="cri-o",shim="spin"} 1
# HELP shimkit_node_failures_total Installer Jobs that failed on a node, by operation and failure reason.
# TYPE shimkit_node_failures_total counter
shimkit_node_failures_total{op="install",reason="CanaryFailed",shim="spin"} 1
shimkit_node_failures_total{op="uninstall",reason="BackoffLimitExceeded",shim="spin"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "shimkit_runtime_restarts_total", "shimkit_node_failures_total"); err != nil {
		t.Error(err)
	}
	for _, tc := range []struct {
		labels map[string]string
		sum    float64
	}{
		{map[string]string{"shim": "spin", "op": "install", "result": "succeeded", "reason": ""}, 12},
		{map[string]string{"shim": "spin", "op": "install", "result": "failed", "reason": "CanaryFailed"}, 30},
		{map[string]string{"shim": "spin", "op": "uninstall", "result": "failed", "reason": "BackoffLimitExceeded"}, 7}, // the Job's start to its Failed condition
		{map[string]string{"shim": "spin", "op": "verify", "result": "succeeded", "reason": ""}, 7},                     // the Job's start to its completion
	} {
		if sum, count := kittest.HistogramSumCount(t, reg, "shimkit_node_operation_duration_seconds", tc.labels); sum != tc.sum || count != 1 {
			t.Errorf("%v: sum %v count %d, want %v and 1", tc.labels, sum, count, tc.sum)
		}
	}
}

// TestMetricsSeenBounded: the Jobs remembered are at most maxSeenJobs, the
// oldest forgotten first.
func TestMetricsSeenBounded(t *testing.T) {
	m := New()
	for i := range maxSeenJobs + 10 {
		if !m.firstTime(jobKey{"spin", types.UID(strconv.Itoa(i))}) {
			t.Fatalf("job %d seen before", i)
		}
	}
	if len(m.seen) != maxSeenJobs || len(m.seenRing) != maxSeenJobs {
		t.Fatalf("remembered %d (ring %d), want %d", len(m.seen), len(m.seenRing), maxSeenJobs)
	}
	last := jobKey{"spin", types.UID("z")}
	m.firstTime(last)
	if m.firstTime(last) {
		t.Error("the newest Job forgotten")
	}
}

// TestMetricsForget: forget drops every series of the Shim, and no other's.
func TestMetricsForget(t *testing.T) {
	m, reg := registered(t)
	for _, shim := range []string{"spin", "kata"} {
		st := v1alpha1.ShimStatus{Nodes: 3, UpdatedNodes: 1, SpecHash: "h1"}
		m.Observe(&v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: shim}}, st, false)
		st.UpdatedNodes = 3
		m.Observe(&v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: shim}}, st, true)
		m.NodeOperation(shim, "install", resultFailed, "RestartFailed", time.Second)
		m.RuntimeRestarted(shim, "containerd")
		m.DriftDetected(shim, "n1")
		m.GateTripped(shim, "WorkloadFailures")
		m.RolloutStep(shim, 1)
		m.RolloutPaused(shim, false)
		m.Conditions(shim, []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue}})
		m.JobFinished(shim, kittest.FinishedJob("u-"+shim, jobview.OpInstall, false, nil))
	}
	before := seriesOf(t, reg)
	m.Forget("spin")
	after := seriesOf(t, reg)
	for name, shims := range before {
		if !shims["spin"] || !shims["kata"] {
			t.Errorf("%s before forget: %v, want spin and kata", name, shims)
		}
		if after[name]["spin"] || !after[name]["kata"] {
			t.Errorf("%s after forget(spin): %v, want kata only", name, after[name])
		}
	}
	if len(before) != 10 {
		t.Errorf("families before forget: %d, want every one of the 10", len(before))
	}
	for k := range m.seen {
		if k.shim == "spin" {
			t.Errorf("seen Job %v of the forgotten Shim", k)
		}
	}
}

// seriesOf returns, per metric family, the shims that have a series.
func seriesOf(t *testing.T, reg prometheus.Gatherer) map[string]map[string]bool {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]bool{}
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "shim" {
					if out[mf.GetName()] == nil {
						out[mf.GetName()] = map[string]bool{}
					}
					out[mf.GetName()][l.GetValue()] = true
				}
			}
		}
	}
	return out
}
