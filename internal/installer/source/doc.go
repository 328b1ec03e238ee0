// Package source gets a plan's artifact to the node installer: the
// fetcher of its source (HTTP, a local file or image directory, an OCI
// registry), sharing the node's artifact cache, and the verifier of its
// signature.
//
// It guarantees:
//   - a fetcher verifies the artifact's digest when the plan pins one and
//     caches verified artifacts by digest under the state directory, so
//     that the same artifact is never downloaded twice and the installer's
//     image needs no /tmp; which files become executable is the plan's to
//     say, not a name pattern's;
//   - an OCI artifact pinned to a digest is fetched by that digest, not by
//     its tag;
//   - SignatureVerifier reads signatures only (nothing of the artifact is
//     downloaded): an OCI artifact's next to its pinned digest in its
//     repository, an http artifact's from its SignatureURL; a plan whose
//     verification cannot be read is invalid (plan.ErrInvalid).
package source
