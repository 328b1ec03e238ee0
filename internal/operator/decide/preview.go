package decide

import (
	"slices"

	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// Preview is the reconcile's own plan of a snapshot (PlanInstall, after
// Records, as a reconcile makes it) and the course the rollout takes from
// it when every node it starts succeeds (Simulate): its first wave is
// the plan's Job starts. A canary RuntimeClass that is someone else's
// starts no install, in the plan and so in the course. The snapshot is
// left as the plan leaves it.
func Preview(obs *Snapshot, r Rules) (*Plan, Simulation, error) {
	records, err := Records(obs)
	if err != nil {
		return nil, Simulation{}, err
	}
	// The course starts from the nodes as read (PlanInstall fills in the
	// plans of obs.Views): what Decide reads of the snapshot, the views
	// copied.
	before := &Snapshot{Shim: obs.Shim, Hash: obs.Hash, Refusal: obs.Refusal, Views: slices.Clone(obs.Views)}
	p, err := PlanInstall(obs, records, r)
	if err != nil {
		return nil, Simulation{}, err
	}
	sim, err := Simulate(before, r.Policy)
	if err != nil {
		return nil, Simulation{}, err
	}
	if p.Classes.CanaryBlocked {
		sim.First.Rollin.Start, sim.Waves = nil, nil
		sim.Stopped = HoldHalted
		sim.Halt = &Trip{Reason: v1alpha1.ReasonRuntimeClassConflict, Message: "the canary's RuntimeClass belongs to someone else: no node installs"}
	}
	return p, sim, nil
}
