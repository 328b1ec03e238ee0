package decide

import (
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// Preview is the reconcile's own plan of a snapshot (PlanInstall, after
// Records, as a reconcile makes it) and the course the rollout takes from
// it when every node it starts succeeds (Simulate): its first wave is
// the plan's Job starts. A canary RuntimeClass that is someone else's
// starts no install, in the plan and so in the course. The snapshot is
// not changed.
func Preview(read *Snapshot, r Rules) (*Plan, Simulation, error) {
	obs, records, err := Records(read)
	if err != nil {
		return nil, Simulation{}, err
	}
	// The delivery rules of the snapshot as the records leave it, as a
	// reconcile takes them (a new retry lifts a halt).
	r.Policy.Delivery = Delivery(obs)
	p, err := PlanInstall(obs, records, r)
	if err != nil {
		return nil, Simulation{}, err
	}
	// The course starts from the nodes as the records leave them, with
	// every input of the reconcile's decision (the retry acted on among
	// them): PlanInstall and Simulate each decide on their own copy.
	sim, err := Simulate(obs, r.Policy)
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
