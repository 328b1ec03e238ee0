// Package runtimeclass publishes the RuntimeClass of a shim. The
// RuntimeClass names the containerd handler and schedules its pods only onto
// nodes that have the shim (scheduling.nodeSelector on the shim's node
// label, see package nodelabel), with the tolerations those nodes need.
//
// # Ownership
//
// A RuntimeClass is cluster-scoped and its name is what pods ask for, so
// an admin or another tool may already have one of the name a shim wants.
// This package never takes over, overwrites or deletes a RuntimeClass that
// someone else wrote. Every RuntimeClass it writes records its owner: the
// controller owner reference of Spec.Owner, whose UID (not its name: an
// owner recreated under the same name is another owner) decides whose the
// RuntimeClass is (Owned).
//
//   - Ensure creates the RuntimeClass when it is absent, and updates it
//     only when its controller reference carries Spec.Owner's UID, with the
//     resourceVersion just read. Labels, annotations and owner references
//     that others added stay. RuntimeClass.handler is immutable, so a
//     changed handler replaces the owned RuntimeClass: it is deleted with
//     its UID and resourceVersion as preconditions and created anew.
//   - A RuntimeClass of that name that is not the owner's (no controller,
//     or another one) is a conflict: Ensure writes nothing and returns a
//     *ConflictError, which wraps ErrConflict and names the RuntimeClass
//     and its controller.
//   - DeleteOwned deletes a RuntimeClass only if the owner controls it,
//     with the UID and resourceVersion it read as preconditions: one that
//     someone else wrote, or recreated after it was read, stays.
//
// Every write is conditional on what was just read (Create fails if the
// name was taken meanwhile, Update and Delete carry resourceVersion and
// UID), so the package never writes a RuntimeClass it has not just seen to
// be the owner's. Writes record the field manager FieldOwner ("shimkit").
//
// Ensure and Takeover each read, decide, then write: Decide and
// DecideTakeover are their decisions on a RuntimeClass as read, without a
// client (a controller that reads a snapshot first decides on it), and
// Apply writes a decision with the preconditions of that read.
//
// Nothing here adopts a foreign RuntimeClass on its own. To hand one
// over, its writer deletes it (or makes Spec.Owner its controller) and
// Ensure runs again; or the new owner names the one controller it
// replaces, a Predecessor (API group, kind, name and, when known, UID),
// and Takeover replaces that owner reference by Spec.Owner's with one
// Update conditional on what it read, only when the handler is already
// Spec.Handler: a migration keeps the RuntimeClass its running pods use,
// and deleting the predecessor no longer deletes it. A RuntimeClass of any
// other controller, or of none, stays a conflict.
package runtimeclass
