// Package classes publishes a Shim's RuntimeClasses from a reconcile's
// snapshot (decide.Snapshot): read once (Read, ReadPredecessor), then
// written by Ensure, TakeOver, ReleaseRCMLabels and DeleteAll.
//
// It guarantees that a RuntimeClass someone else owns is never written or
// deleted (a conflict is reported, with a Warning Event), that every write
// carries the resourceVersion or UID read (one changed since is read again
// by the next reconcile, not overwritten), that reads after the snapshot
// are served from it (a decision never depends on a later read), and that
// runtime-class-manager's RuntimeClasses are taken over only from the Shim
// of the UID that spec.migrateFrom names.
package classes
