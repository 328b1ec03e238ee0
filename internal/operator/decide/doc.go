// Package decide is the operator's pure core: the Snapshot a reconcile
// reads once, and the decisions made on it.
//
// It guarantees that nothing here reads or writes the cluster, waits, or
// asks a clock: a decision is a function of the Snapshot (whose Now is
// the time it was read), so that the same Snapshot always yields the same
// decision, and a table test or a fuzz test can drive it without an API
// server. TestPure fails when the package imports a client.
package decide
