// Package revision keeps the revisions of a Shim that a failed rollout can
// go back to (spec.rolloutStrategy.onFailure: Revert).
//
// It guarantees that a revision holds all a node needs to install it
// again (the spec and the artifact pinned for it, Data), that at most
// five are kept per Shim, that it deletes only the Shim's own
// ControllerRevisions (by UID, as read), and that a revision that cannot
// be read leaves the rollout halted, with a Warning Event, rather than
// going back to something else.
package revision
