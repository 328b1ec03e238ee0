// Package metrics holds the Prometheus metrics of the Shim reconciler: the
// nodes of each Shim by state, the rollout's duration, the installer Jobs'
// per-node operations (duration, failures by reason, containerd restarts),
// drift, the health gate's trips, the rollout's step and pause, and the
// Shims' conditions as kube-state-metrics exports them.
//
// It guarantees that every series carries a shim label and that Forget
// drops every series of a Shim; that a finished Job is counted once (a
// bounded memory of the Jobs counted, then the node's record, keeps it
// from being counted again); and, through its tests, that every series
// the Grafana dashboard and the alert rules shipped with the operator
// query exists. Nothing is registered on a global registry: Register
// takes the registry.
package metrics
