// Package pin pins a Shim's artifact to a digest before any node is
// planned, so that every node of a rollout installs the same bytes.
//
// It guarantees:
//   - a Shim whose spec pins every digest and asks for no signature is
//     pinned without a registry or a download;
//   - a tag or URL is resolved when the spec (its verification included),
//     the resolve annotation or the resolve interval asks, never mid-way
//     through a rollout because of a stale read: the pin made last stands
//     in for a status that lags behind;
//   - a failed resolution keeps the pinned digest (with its error) or,
//     without one, refuses the spec with a Degraded reason; it is not asked
//     again until what it read changes (spec, annotation, pull secret,
//     trusted root) or its backoff (DefaultBackoff, doubled per failure,
//     at most 10 minutes or the resolve interval) passed.
//
// Resolving (Resolver, ArtifactResolver) turns what the spec names (an
// OCI reference, an HTTP location, per-platform artifacts) into the
// digests every node of a rollout installs, and verifies the artifact's
// signature first when the spec asks for it: an OCI reference resolves
// to the digest of its index or manifest (oras-go); an HTTP artifact
// without a sha256 is streamed once through sha256, nothing stored; a
// signature is read before the artifact, which is not downloaded when
// the signature is missing (signature.ErrNotFound); a verified digest
// says what verified it (Resolved.VerifiedBy). StaticResolver is the
// in-memory fake: it pins what the spec pins and answers a table of
// references. A Resolver does no caching of its own: the Pinner resolves
// once per spec and pins the result in the Shim's status.
package pin
