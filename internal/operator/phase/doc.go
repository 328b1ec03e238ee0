// Package phase marks where a reconcile is, reading its snapshot or acting
// on its decision, and checks a client against that mark.
//
// A reconcile that decides everything before it acts starts each run with
// Start, reads its snapshot, computes its decision, calls Decided, then
// carries the decision out. Checked wraps the client it uses: a write made
// while the reconcile is still observing, or a read made once it acts,
// breaks that order and is reported (and, for a write, refused with
// ErrWriteBeforeDecision, so that nothing is written from a half-made
// decision). Events too: the events API's recorder takes no context, so
// a reconcile's roles emit through a Recorder, which is given theirs; an
// Event emitted while the reconcile observes is reported and dropped
// (ErrEventBeforeDecision). What reading the snapshot finds to tell (a
// new digest, a revision that cannot be read) is gathered as data and
// emitted once the decision is complete. Calls outside a reconcile (a
// context without Start: event handlers, setup) are not checked.
//
// The operator's envtest suites run every reconcile through Checked; a
// controller of another project can do the same with its own client.
package phase
