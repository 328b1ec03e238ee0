// Package status reports a reconcile's decision: the Shim's status
// (counts, conditions with observedGeneration, the rollout, revisions),
// its Events and its metrics.
//
// It guarantees that the status is written with server-side apply under
// the field owner shimkit and only when it changed; that a rollout whose
// counts alone changed writes it at most once a second while a changed
// condition is written at once; that per-node Normal Events are gathered
// into one Event per reason at most every five seconds (at once when the
// rollout settles); and that a rollout completed on every node is
// recorded as a revision before the status says so.
package status
