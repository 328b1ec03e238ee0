package operator

import (
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// metrics of the reconciler: nodes per state per shim, and how long a
// rollout took from the spec change to Ready.
type metrics struct {
	nodes    *prometheus.GaugeVec
	duration *prometheus.HistogramVec

	mu      sync.Mutex
	started map[string]startedRollout // shim → the rollout in progress
}

type startedRollout struct {
	hash string
	at   time.Time
}

func newMetrics() *metrics {
	return &metrics{
		nodes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "shimkit_shim_nodes", Help: "Nodes of a Shim by state: matching (and eligible), updated, in_progress, failed, skipped (matching, not eligible).",
		}, []string{"shim", "state"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "shimkit_rollout_duration_seconds", Help: "Time from a Shim's spec change until every matching node has it.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 14),
		}, []string{"shim"}),
		started: map[string]startedRollout{},
	}
}

// Register adds the metrics to a registry (controller-runtime's
// metrics.Registry for the manager's endpoint). When another reconciler in
// the process registered them already, this one reports through those.
func (m *metrics) Register(reg prometheus.Registerer) error {
	if err := reg.Register(m.nodes); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return err
		}
		m.nodes = are.ExistingCollector.(*prometheus.GaugeVec)
	}
	if err := reg.Register(m.duration); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return err
		}
		m.duration = are.ExistingCollector.(*prometheus.HistogramVec)
	}
	return nil
}

func (m *metrics) observe(shim *v1alpha1.Shim, st v1alpha1.ShimStatus, ready bool) {
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

func (m *metrics) forget(shim string) {
	m.nodes.DeletePartialMatch(prometheus.Labels{"shim": shim})
	m.mu.Lock()
	delete(m.started, shim)
	m.mu.Unlock()
}
