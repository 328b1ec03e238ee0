package metrics_test

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shimkit/shimkit/internal/operator/metrics"
)

// The reconciler's metrics go on the registry given (the manager's, in
// shimkit-operator): nothing global.
func ExampleMetrics_Register() {
	reg := prometheus.NewRegistry()
	m := metrics.New()
	if err := m.Register(reg); err != nil {
		fmt.Println(err)
	}
	m.RuntimeRestarted("spin", "containerd")
	m.DriftDetected("spin", "node-1")
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		fmt.Println(mf.GetName(), len(mf.GetMetric()))
	}
	// Output:
	// shimkit_drift_detected_total 1
	// shimkit_runtime_restarts_total 1
}
