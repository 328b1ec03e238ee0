// Package decide is the operator's pure core: the Snapshot a reconcile
// reads once, and every decision made on it, from the snapshot alone: no
// client, no context, no I/O, no clock read.
//
// A reconcile reads one Snapshot (the Shim, its target and why its spec
// is refused, a NodeView per node: its labels and records, its newest
// installer Jobs and what they reported; the node gate, the
// RuntimeClasses, every Shim, the rollout clock's reading) and makes one
// Plan of it, whole before its first write (PlanInstall, or PlanRemoval
// for a deleted Shim): the records of finished Jobs and a retry, the
// rollout, the RuntimeClasses, the batch offer, the Jobs to start with
// the node gate's reservations, the taints, the verifications, the
// Events, the status and the requeue. The operator carries the Plan out
// and decides nothing of its own (hack/plancheck).
//
// The rollout's decision is Decide (DecideRemoval for a deleted Shim). It
// classifies every node (targeted or skipped and why, installed,
// changing, failed, drifted), builds the install plan of each node that
// needs one (Policy.PlanFor), and plans the rollout under the Shim's
// strategy (rollout.Planner): which nodes start now, which are in flight,
// whether the rollout is done or halted. Then the progressive-delivery
// rules (DeliveryRules, which Delivery reads from the snapshot) apply,
// with the time passed in: a halt of the health gate (the workloads'
// failures are an input, Snapshot.GateFailures; Delivery judges them with
// JudgeGate), the rollout's steps and
// bakes (rollout.Steps), a pause, and maintenance windows
// (rollout.Windows) outside which only nodes that run no workload yet or
// that an admin forced start; a failure with onFailure Revert says so
// (Delivered.Revert), and the previous revision becomes the target.
// Simulate decides wave after wave what follows when every node started
// succeeds (kubectl shimkit plan: Preview). Counts and Conditions turn a
// Rollup (the decision and what the plan found: the RuntimeClasses, a
// refusal) into the Shim's status: the node counts and the Ready,
// Progressing, Degraded, Reconciling and Stalled conditions with their
// reason constants.
//
// It guarantees that nothing here reads or writes the cluster, waits, or
// asks a clock: a decision is a function of the Snapshot (whose Now is
// the time it was read, and RolloutNow the rollout clock's), so that the
// same Snapshot always yields the same decision, and a table test or a
// fuzz test can drive it without an API server. And that it changes
// nothing it is given: Records, PlanInstall, PlanRemoval and Simulate
// decide on a Copy and return what they decide, and nothing here holds a
// lock (TestSnapshotUnchangedByPlanningAndActing in package operator,
// TestCoreHoldsNoLock in hack/plancheck). TestPure fails when the
// package, or a package of shimkit it links, imports a client, the
// network, the OS or a context or calls the clock (TestImportBoundary:
// client-go and controller-runtime are not linked at all).
//
// And, checked by table and golden tests and by fuzz tests on random
// snapshots (FuzzRollout, FuzzSimulate, FuzzDecide, FuzzPreviewIsThePlan):
//   - never more nodes changing than maxUpdate allows, reverts included;
//   - never a failed node started again without a new spec (or, for a
//     failed canary, a new canary) or a retry that cleared its failure;
//   - nothing installed while the spec is refused or the rollout halted;
//   - never an uninstall of a node on which the Shim has nothing (its
//     label, or a Job of its own changing it);
//   - nothing starts while paused; outside a window, only nodes that are
//     fresh or forced; no more updated than the current step allows, and
//     no next step before its bake has passed with the gate quiet;
//   - a node's records change only as its own Jobs and a retry request
//     say, and no RuntimeClass that is not the Shim's is written or
//     deleted but for a takeover the Shim asked for;
//   - the simulation's first wave is what Decide starts now, and a
//     preview's first wave is what the plan starts (and, on clusters of
//     objects, what a reconcile starts: FuzzPlanIsTheReconcile in package
//     operator).
package decide
