package metrics

import (
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// Metrics of the reconciler: nodes per state per shim, how long a rollout
// took from the spec change to Ready, per-node operations of the installer
// Jobs, and the progressive-delivery signals (rollout step, pause, workload
// gate trips, drift). Every series has a shim label; Forget drops them all.
// The methods are safe for concurrent use.
type Metrics struct {
	nodes    *prometheus.GaugeVec
	duration *prometheus.HistogramVec

	nodeOpDuration *prometheus.HistogramVec // shim, op, result, reason
	nodeFailures   *prometheus.CounterVec   // shim, op, reason
	restarts       *prometheus.CounterVec   // shim
	drift          *prometheus.CounterVec   // shim, node
	gateTrips      *prometheus.CounterVec   // shim, reason
	step           *prometheus.GaugeVec     // shim
	paused         *prometheus.GaugeVec     // shim
	condition      *prometheus.GaugeVec     // shim, type, status

	mu      sync.Mutex
	started map[string]startedRollout // shim → the rollout in progress
	conds   map[string][]string       // shim → condition types exported
	// seen are the finished Jobs jobFinished counted, the last
	// maxSeenJobs of them (seenRing, oldest at seenNext once full).
	seen     map[jobKey]struct{}
	seenRing []jobKey
	seenNext int
}

// jobKey is one Shim's part of a Job (a batch Job carries several Shims').
type jobKey struct {
	shim string
	uid  types.UID
}

// maxSeenJobs bounds the finished Jobs jobFinished remembers: far more
// than are finished at once (a finished Job is recorded within a few
// reconciles, its node's record then keeps it from being counted again).
const maxSeenJobs = 4096

type startedRollout struct {
	hash string
	at   time.Time
}

// Values of the result label of shimkit_node_operation_duration_seconds.
const (
	resultSucceeded = "succeeded"
	resultFailed    = "failed"
)

// conditionStatuses are the values of shimkit_shim_condition's status label:
// the series of the condition's status is 1, the two others 0 (as
// kube-state-metrics exports conditions).
var conditionStatuses = []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown}

// New returns the metrics, not registered yet (Register).
func New() *Metrics {
	return &Metrics{
		nodes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "shimkit_shim_nodes", Help: "Nodes of a Shim by state: matching (and eligible), updated, in_progress, failed, skipped (matching, not eligible).",
		}, []string{"shim", "state"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "shimkit_rollout_duration_seconds", Help: "Time from a Shim's spec change until every matching node has it.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 14),
		}, []string{"shim"}),
		nodeOpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "shimkit_node_operation_duration_seconds", Help: "Duration of an installer Job's operation on one node (op: install, uninstall, verify; result: succeeded, failed; reason: the failure reason, empty on success).",
			Buckets: prometheus.ExponentialBuckets(0.5, 2, 12),
		}, []string{"shim", "op", "result", "reason"}),
		nodeFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shimkit_node_failures_total", Help: "Installer Jobs that failed on a node, by operation and failure reason.",
		}, []string{"shim", "op", "reason"}),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shimkit_runtime_restarts_total", Help: "Restarts of a node's container runtime (containerd, CRI-O) by an installer Job of the Shim.",
		}, []string{"shim", "runtime"}),
		drift: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shimkit_drift_detected_total", Help: "Times a node's installed shim was found to differ from what the operator installed.",
		}, []string{"shim", "node"}),
		gateTrips: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shimkit_workload_gate_trips_total", Help: "Times the workload gate halted a Shim's rollout, by reason.",
		}, []string{"shim", "reason"}),
		step: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "shimkit_rollout_step", Help: "0-based index of the current step of a Shim's rollout; absent when no rollout is in progress.",
		}, []string{"shim"}),
		paused: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "shimkit_rollout_paused", Help: "1 when a Shim's rollout is paused, else 0.",
		}, []string{"shim"}),
		condition: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "shimkit_shim_condition", Help: "A Shim's status conditions: 1 on the series of the condition's status (True, False, Unknown), 0 on the others.",
		}, []string{"shim", "type", "status"}),
		started: map[string]startedRollout{},
		conds:   map[string][]string{},
		seen:    map[jobKey]struct{}{},
	}
}

// register adds c to reg, or returns the collector registered already under
// the same descriptor (AlreadyRegisteredError) so two reconcilers in one
// process report through the same one.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return c, err
		}
		existing, ok := are.ExistingCollector.(C)
		if !ok {
			return c, err
		}
		return existing, nil
	}
	return c, nil
}

// Register adds the metrics to a registry (controller-runtime's
// metrics.Registry for the manager's endpoint). When another reconciler in
// the process registered them already, this one reports through those.
func (m *Metrics) Register(reg prometheus.Registerer) error {
	var err error
	for _, g := range []**prometheus.GaugeVec{&m.nodes, &m.step, &m.paused, &m.condition} {
		if *g, err = register(reg, *g); err != nil {
			return err
		}
	}
	for _, h := range []**prometheus.HistogramVec{&m.duration, &m.nodeOpDuration} {
		if *h, err = register(reg, *h); err != nil {
			return err
		}
	}
	for _, c := range []**prometheus.CounterVec{&m.nodeFailures, &m.restarts, &m.drift, &m.gateTrips} {
		if *c, err = register(reg, *c); err != nil {
			return err
		}
	}
	return nil
}

func (m *Metrics) Observe(shim *v1alpha1.Shim, st v1alpha1.ShimStatus, ready bool) {
	for state, n := range map[string]int32{"matching": st.Nodes, "updated": st.UpdatedNodes, "in_progress": st.InProgressNodes, "failed": st.FailedNodes, "skipped": st.SkippedNodes} {
		m.nodes.WithLabelValues(shim.Name, state).Set(float64(n))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.started[shim.Name]
	switch {
	case !ok || cur.hash != st.SpecHash:
		if !ready {
			m.started[shim.Name] = startedRollout{st.SpecHash, time.Now()}
		}
	case ready:
		m.duration.WithLabelValues(shim.Name).Observe(time.Since(cur.at).Seconds())
		delete(m.started, shim.Name)
	}
}

// nodeOperation records one finished installer Job on a node: op is
// install, uninstall or verify, result succeeded or failed, reason the
// failure reason (installer/plan's Reason*) or "" on success. A failure
// also counts in shimkit_node_failures_total. Call it once per Job.
func (m *Metrics) NodeOperation(shim, op, result, reason string, d time.Duration) {
	m.nodeOpDuration.WithLabelValues(shim, op, result, reason).Observe(d.Seconds())
	if result == resultFailed {
		m.nodeFailures.WithLabelValues(shim, op, reason).Inc()
	}
}

// jobFinished counts a finished installer Job of shim, once per Job
// (later calls for the same Job are ignored): its operation's duration and
// result (nodeOperation), and containerd's restart when the installer
// reports one. Call it where the Job's outcome is recorded on the node.
func (m *Metrics) JobFinished(shim string, j *jobview.View) {
	if j == nil || j.Object == nil || !m.firstTime(jobKey{shim, j.Object.UID}) {
		return
	}
	result, reason := resultSucceeded, ""
	if j.Failed() {
		result = resultFailed
		reason, _ = j.Failure()
	}
	m.NodeOperation(shim, j.Op, result, reason, jobDuration(j))
	if j.Result != nil && j.Result.Restarted {
		m.RuntimeRestarted(shim, j.Result.Runtime)
	}
}

// firstTime reports whether k was not seen yet, and remembers it.
func (m *Metrics) firstTime(k jobKey) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.seen[k]; ok {
		return false
	}
	if len(m.seenRing) < maxSeenJobs {
		m.seenRing = append(m.seenRing, k)
	} else {
		delete(m.seen, m.seenRing[m.seenNext])
		m.seenRing[m.seenNext] = k
		m.seenNext = (m.seenNext + 1) % maxSeenJobs
	}
	m.seen[k] = struct{}{}
	return true
}

// jobDuration is how long the Job's operation took: as the installer
// measured it, else from the Job's start to its end.
func jobDuration(j *jobview.View) time.Duration {
	if j.Result != nil && j.Result.Duration > 0 {
		return time.Duration(j.Result.Duration)
	}
	st := j.Object.Status
	if st.StartTime == nil {
		return 0
	}
	end := st.CompletionTime
	if end == nil {
		if c := j.Condition(batchv1.JobFailed); c != nil {
			end = &c.LastTransitionTime
		}
	}
	if end == nil || end.Before(st.StartTime) {
		return 0
	}
	return end.Sub(st.StartTime.Time)
}

// RuntimeRestarted counts one restart of a node's container runtime
// (plan.RuntimeContainerd, plan.RuntimeCRIO; "" when the installer did
// not say) by a Job of shim.
func (m *Metrics) RuntimeRestarted(shim, runtime string) {
	m.restarts.WithLabelValues(shim, runtime).Inc()
}

// driftDetected counts one detection of drift of shim on node.
func (m *Metrics) DriftDetected(shim, node string) {
	m.drift.WithLabelValues(shim, node).Inc()
}

// gateTripped counts one halt of shim's rollout by the workload gate.
func (m *Metrics) GateTripped(shim, reason string) {
	m.gateTrips.WithLabelValues(shim, reason).Inc()
}

// rolloutStep sets the 0-based index of shim's current rollout step; a
// negative step (no rollout in progress) removes the series.
func (m *Metrics) RolloutStep(shim string, step int) {
	if step < 0 {
		m.step.DeleteLabelValues(shim)
		return
	}
	m.step.WithLabelValues(shim).Set(float64(step))
}

// rolloutPaused sets whether shim's rollout is paused.
func (m *Metrics) RolloutPaused(shim string, paused bool) {
	v := 0.0
	if paused {
		v = 1
	}
	m.paused.WithLabelValues(shim).Set(v)
}

// conditions exports shim's status conditions; a type no longer among
// conds loses its series.
func (m *Metrics) Conditions(shim string, conds []metav1.Condition) {
	types := make([]string, 0, len(conds))
	for _, c := range conds {
		types = append(types, c.Type)
		for _, s := range conditionStatuses {
			v := 0.0
			if c.Status == s {
				v = 1
			}
			m.condition.WithLabelValues(shim, c.Type, string(s)).Set(v)
		}
	}
	m.mu.Lock()
	prev := m.conds[shim]
	m.conds[shim] = types
	m.mu.Unlock()
	for _, t := range prev {
		found := false
		for _, n := range types {
			found = found || n == t
		}
		if !found {
			m.condition.DeletePartialMatch(prometheus.Labels{"shim": shim, "type": t})
		}
	}
}

// forget drops every series of shim (the Shim was deleted).
func (m *Metrics) Forget(shim string) {
	l := prometheus.Labels{"shim": shim}
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{
		m.nodes, m.duration, m.nodeOpDuration, m.nodeFailures, m.restarts, m.drift, m.gateTrips, m.step, m.paused, m.condition,
	} {
		v.DeletePartialMatch(l)
	}
	m.mu.Lock()
	delete(m.started, shim)
	delete(m.conds, shim)
	for k := range m.seen {
		if k.shim == shim {
			delete(m.seen, k)
		}
	}
	m.mu.Unlock()
}
