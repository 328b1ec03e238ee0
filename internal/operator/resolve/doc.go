// Package resolve pins a Shim's artifact: a Resolver turns what the spec
// names (an OCI reference, an HTTP location, per-platform artifacts) into
// the digests every node of a rollout installs, and verifies the
// artifact's signature first when the spec asks for it.
//
// Guarantees: an OCI reference resolves to the digest of its index or
// manifest (oras-go); an HTTP artifact without a sha256 is streamed once
// through sha256, nothing stored; a signature is read before the
// artifact, which is not downloaded when the signature is missing
// (signature.ErrNotFound); a verified digest says what verified it
// (Resolved.VerifiedBy). StaticResolver is the in-memory fake: it pins
// what the spec pins and answers a table of references.
//
// The operator resolves once per spec and pins the result in the Shim's
// status (operator/pin.go); this package does no caching of its own.
package resolve
