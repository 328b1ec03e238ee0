package status

import "github.com/shimkit/shimkit/internal/operator/decide"

// Progress shows where the plan left the rollout in the metrics: a
// tripped health gate, the rollout's step, and whether it is paused.
func (r *Reporter) Progress(name string, p decide.Progress) {
	if p.Tripped != "" {
		r.metrics.GateTripped(name, p.Tripped)
	}
	r.metrics.RolloutStep(name, p.Step)
	r.metrics.RolloutPaused(name, p.Paused)
}
