// Package nodejob runs an installer plan (plan.NodePlan) on one node as a
// Kubernetes Job, and reads the installer's answer (plan.NodeResult) back.
// It knows nothing of the Shim type.
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
//   - ResultOf reads the installer's NodeResult from the termination
//     message of the Job's newest pod that has one.
//
// The operator builds its Jobs with Build and reads them with Pods and
// ResultOf; one installer at a time per node is the node gate's rule
// (package nodegate), and the installer's own node lock serializes any
// others.
package nodejob
