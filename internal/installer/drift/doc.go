// Package drift says how a node differs from what an install recorded for
// a Shim, and how that record differs from a plan: one human-readable
// entry per mismatch. Verify reports it; an install of the same spec
// compares the same way first and repairs what it finds.
//
// It guarantees:
//   - the record is compared with the plan (OfRecord): the spec it was
//     installed from, the artifact the plan pins, the Shim's UID;
//   - the node is compared with the record (Node): each bundle file's
//     presence, bytes and mode (package bundle), the "current" and PATH
//     links, each handler in the runtime's config, each unit file's
//     presence and bytes;
//   - a file's mode is compared only when the plan's files are the
//     installed layout (Files);
//   - every comparison only reads; what cannot be read is the error,
//     returned with the drift found before it.
package drift
