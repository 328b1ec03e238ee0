// Package rollout decides which nodes change next. It is pure: no client,
// no clock (the caller passes the time), no I/O; the operator gives it the matching nodes and their
// states, and gets back the nodes to start now.
//
// # Semantics
//
//   - The budget is maxUpdate: a count, or a percentage of the matching
//     nodes rounded up like a DaemonSet's maxUnavailable, with a minimum of
//     one node. Recreate means every node at once.
//   - Nodes in flight (installing or uninstalling) count against the
//     budget: the planner starts budget − in-flight nodes, never more.
//   - A failed node halts the rollout: no new node starts until the failure
//     is resolved (the node is retried or leaves the set) or the spec
//     changes (a node that failed at an older spec hash does not halt the
//     new spec's rollout).
//   - An upgrade is a node installed at an older spec hash; it is changed
//     like a new install.
//   - The order is deterministic but spread: nodes are sorted by a hash of
//     the node's UID, the shim's UID and the spec hash, so a rollout does
//     not always begin with the same nodes, yet an operator that restarts
//     picks the same ones again.
//   - Removal (the Shim is deleted, or a node stops matching) plans in the
//     same way, towards no node having the shim.
//   - Steps stage a rollout (Steps.Advance): each step bounds how many
//     nodes have the new spec at its end, then bakes; a bake ends only at
//     its time and while the caller says the fleet is healthy. The budget
//     still bounds each step (Plan.Limit applies the step's bound).
//   - Windows (Windows.Open) are weekly wall-clock windows in an IANA zone:
//     they follow daylight-saving changes, and one that ends before it
//     starts closes the next day. The caller passes the time: nothing here
//     reads the clock.
package rollout
