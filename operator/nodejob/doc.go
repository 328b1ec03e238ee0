// Package nodejob runs an installer plan (plan.NodePlan) on one node as a
// Kubernetes Job, and reads the installer's answer (plan.NodeResult) back.
// It knows nothing of the Shim type: an operator with its own custom
// resource builds a plan, starts it with an Executor, and reads its result.
//
// Guarantees:
//   - Build is pure: the same plan and Spec give the same Job. The Job is
//     pinned to the plan's node (no scheduling), tolerates every taint,
//     carries the plan as an annotation mounted by the downward API, mounts
//     only the node directories the installer works in (HostDirs), and
//     fails at once (podFailurePolicy) on the installer's final exit codes
//     (plan.FinalExitCodes): a refusal or a rollback is not retried.
//   - The pod's grace period covers a containerd restart's health wait and
//     the rollback the installer starts on SIGTERM: never a SIGKILL half-way
//     through a rollback.
//   - One installer at a time per node: Executor.Start refuses with
//     ErrNodeBusy while another installer Job of its namespace (labelled
//     app.kubernetes.io/managed-by=shimkit, whoever started it) runs on
//     the node; the installer's own node lock serializes any others.
//   - Result reads the installer's NodeResult from the termination message
//     of the Job's newest pod that has one; a finished Job without one (its
//     pods gone, killed before writing) gives the Job's own condition.
//
// The operator builds its Jobs with Build and reads them with ResultOf;
// Executor is the same machinery for callers without the operator's
// rollout, node gate and cross-Shim batching.
package nodejob
