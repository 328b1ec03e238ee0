// Package shimspec says what a Shim's spec means, in pure functions of the
// Shim (and of a node, for a plan): the one place where the Shim API's
// defaults are applied.
//
// It guarantees:
//   - BuildPlan and Build turn a Shim into the validated NodePlan of one
//     node, or an error naming the node and the field;
//   - Validate and RefusalOf refuse, with a Degraded reason, what the CRD's
//     rules cannot check (runtimeOptions, the operator's namespace, the
//     rollout rules' time zones), and every Refusal names the field;
//   - TargetHash and PinOf say what a rollout installs: the spec and, unless
//     the spec pins it itself, the artifact pinned for it in the status;
//   - Classes and CanaryClass are the Shim's RuntimeClasses, each owned by
//     the Shim's UID (OwnedBy), scheduling onto the nodes with its label;
//   - RolloutRules, FailurePolicy, Gate and Planner read the rollout
//     strategy.
//
// Nothing here reads the cluster, a clock or the network.
package shimspec
