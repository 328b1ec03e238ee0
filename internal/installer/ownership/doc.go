// Package ownership is what the node installer owns on a node, and how it
// tells: the refusals of a name that is not its to take (ErrConflict,
// ErrReserved), the undo that finds a file someone changed since
// (ErrConcurrentEdit), and the digests its records keep of what it wrote.
//
// It guarantees:
//   - a handler, proxy plugin or unit another Shim's record claims is
//     refused for this one (CheckOthers), naming it and the other Shim;
//   - a unit file is this Shim's only when its record lists it and the
//     file still holds what shimkit wrote (CheckUnitsOurs): one nobody
//     recorded, or one edited since, is a conflict;
//   - a digest is "sha256:<hex>" of the bytes, whether they are in memory
//     (Digest) or read as a stream (FileDigest);
//   - every check only reads.
package ownership
