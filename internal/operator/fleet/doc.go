// Package fleet decides, for one Shim, what happens next on its nodes,
// from a snapshot alone: no client, no context, no I/O, no clock read.
//
// A reconcile reads a Snapshot once (the Shim, a NodeView per node: its
// labels and records, its newest installer Job and what that Job
// reported), calls Decide (or DecideRemoval for a deleted Shim), then
// carries the Decision out. Decide classifies every node (targeted or
// skipped and why, installed, changing, failed, drifted), builds the
// install plan of each node that needs one (Policy.PlanFor), and plans
// the rollout under the Shim's strategy (rollout.Planner): which nodes
// start now, which are in flight, whether the rollout is done or halted.
// Then the progressive-delivery rules of Policy.Delivery apply, with the
// time passed in: a halt of the health gate (its verdict is an input:
// judged by package health from the workloads), the rollout's steps and
// bakes (rollout.Steps), a pause, and maintenance windows (rollout.Windows)
// outside which only nodes that run no workload yet or that an admin
// forced start; a failure with onFailure Revert says so (Delivered.Revert),
// and the caller makes the previous revision the target.
// Counts and Conditions turn a Rollup (the decision and what the writes
// found: the RuntimeClasses, a refusal) into the Shim's status: the node
// counts and the Ready, Progressing, Degraded, Reconciling and Stalled
// conditions with their reason constants.
//
// Guarantees, checked by table tests and a fuzz test on random snapshots:
//   - never more nodes changing than maxUpdate allows;
//   - never a failed node started again without a new spec (or, for a
//     failed canary, a new canary) or a retry that cleared its failure;
//   - nothing installed while the spec is refused or the rollout halted;
//   - never an uninstall of a node on which the Shim has nothing (its
//     label, or a Job of its own changing it).
//   - nothing starts while paused; outside a window, only nodes that are
//     fresh or forced; no more updated than the current step allows, and
//     no next step before its bake has passed with the gate quiet.
//
// The package imports neither client-go nor controller-runtime
// (TestImportBoundary), so that every decision is testable without an API
// server and usable by another controller.
package fleet
