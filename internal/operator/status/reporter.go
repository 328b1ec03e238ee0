package status

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/operator/metrics"
	"github.com/shimkit/shimkit/internal/operator/phase"
	"github.com/shimkit/shimkit/internal/operator/revision"
)

// Reporter writes what a reconcile decided for the people and tools that
// watch a Shim: its status (server-side apply, field owner shimkit), its
// Events and its metrics, each paced so that a rollout's writes per node
// stay a Job and a node patch.
type Reporter struct {
	client    client.Client
	recorder  *phase.Recorder
	metrics   *metrics.Metrics
	revisions *revision.Store
	// pending are the per-node events held back, statusPace when each
	// Shim's status was last written (both pace a rollout's writes).
	pending    pendingEvents
	statusPace pace
}

// New returns a Reporter writing through c, recording Events through
// recorder (nil: none) and metrics into m, and recording revisions in
// revisions once a rollout is complete.
func New(c client.Client, recorder *phase.Recorder, m *metrics.Metrics, revisions *revision.Store) *Reporter {
	return &Reporter{client: c, recorder: recorder, metrics: m, revisions: revisions}
}

// Forget drops what the Reporter remembers of the Shim name (deleted).
func (r *Reporter) Forget(name string) {
	r.pending.forget(name)
	r.statusPace.forget(name)
}
