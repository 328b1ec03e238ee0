// Package phase marks where a reconcile is, reading its snapshot or acting
// on its decision, and checks a client against that mark.
//
// A reconcile that decides everything before it acts starts each run with
// Start, reads its snapshot, computes its decision, calls Decided, then
// carries the decision out. Checked wraps the client it uses: a write made
// while the reconcile is still observing, or a read made once it acts,
// breaks that order and is reported (and, for a write, refused with
// ErrWriteBeforeDecision, so that nothing is written from a half-made
// decision). Calls outside a reconcile (a context without Start: event
// handlers, setup) are not checked.
//
// The operator's envtest suites run every reconcile through Checked; a
// controller of another project can do the same with its own client.
package phase
