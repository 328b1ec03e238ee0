// Package report turns what the operator sees of a Shim into what an
// admin reads: one row per node the Shim concerns (kubectl shimkit status),
// with the node's container runtime, its state as the rollout counts it,
// the revision and digest it has, since when, and why it failed or is
// skipped. It is pure: it reads the node views (operator.NodeViews) and
// the Shim, and writes a table, JSON or YAML; it calls no API server.
//
// The states are the rollout's (decide.NodeView.State), named for people:
// Current (the Shim's status.specHash is installed), Outdated (an older
// revision is), Installing, Uninstalling, Failed, Pending (selected, not
// installed, nothing running yet) and Skipped (selected but cannot run the
// shim, with the skip reason: NotLinux, RuntimeNotSupported, ImmutableOS,
// ReadOnlyHost, HandlerNotReported, NoArtifact).
package report
