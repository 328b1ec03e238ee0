// Package signature verifies who signed a shim artifact that is already
// pinned to a sha256 digest: an OCI manifest or image index (VerifyOCI), or
// an HTTP download (VerifyBlob). It never needs the artifact's bytes, only
// its digest, so the operator can check a signature when it resolves an
// artifact and the node installer before it downloads anything.
//
// A Policy trusts public keys, a keyless (Fulcio certificate) identity, or
// both; a signature by any one of them suffices. NewVerifier checks the
// policy once (ErrPolicy, naming the bad field); a Verifier is immutable
// and safe for concurrent use. The package is separate from fetch and
// containerdconfig so that they do not link the sigstore stack.
//
// # Formats accepted
//
//   - OCI, sigstore bundle referrers (cosign 3, the default of cosign sign
//     --new-bundle-format): a manifest whose subject is the signed
//     descriptor and whose artifactType is a sigstore bundle media type
//     (v0.1, v0.2, v0.3), with the bundle as a layer. Found through the
//     OCI referrers API, or the referrers tag schema (tag sha256-<hex>
//     holding an index) where the registry has no such API; oras-go falls
//     back by itself. Tried first.
//   - OCI, the cosign tag scheme: tag sha256-<hex>.sig in the same
//     repository, whose application/vnd.dev.cosign.simplesigning.v1+json
//     layers carry the signature in the dev.cosignproject.cosign/signature
//     annotation. Public keys only.
//   - Blobs: a sigstore bundle (JSON), or a detached signature over the
//     artifact, base64 or raw, as cosign sign-blob writes it.
//
// # What is checked
//
//   - Digest binding: a bundle's DSSE envelope must hold an in-toto
//     statement of predicate type https://sigstore.dev/cosign/sign/v1
//     whose subject has the digest (attestations such as provenance or
//     SBOMs, signed by the same key, are not signatures and are refused);
//     a bundle's message signature must be over the digest; a
//     simple-signing payload must name the digest as
//     critical.image.docker-manifest-digest, with critical.type "cosign
//     container image signature"; a detached signature must verify against
//     the digest.
//   - Signer: a public key of the policy (ECDSA P-256/P-384/P-521, RSA
//     2048-4096 PKCS #1 v1.5, Ed25519), whatever key hint the signature
//     carries; or a certificate for the keyless identity (OIDC issuer equal,
//     subject equal or matching the regular expression) chaining to a
//     Fulcio CA of the trusted root.
//   - Keys need nothing else: keyed verification is offline, no
//     transparency log or timestamp is required or consulted.
//   - Keyless needs what sigstore's standard verification asks of the
//     trusted root given: a trusted time for the short-lived certificate
//     (a transparency log entry or an RFC 3161 timestamp); an inclusion
//     proof in a transparency log of the root when it lists any; an
//     embedded SCT when it lists CT logs.
//   - Size: manifests, bundles and payloads over 1 MiB are refused, at most
//     16 bundle referrers and 16 simple-signing layers are tried, at most
//     16 pages of referrers are read, so that a hostile registry cannot
//     exhaust memory or time.
//
// # Errors
//
// ErrMissing: nothing that claims to sign the digest was found (a caller
// that found nothing at a signature URL says ErrNotFound, which is also
// ErrMissing). ErrInvalid:
// something was found and nothing verifies; the error says why each
// candidate failed. A registry that cannot be read gives its own error,
// neither of the two, so that a caller can retry it.
//
// # Not supported
//
//   - Keyless signatures in the cosign tag scheme: keyless needs a sigstore
//     bundle.
//   - Ed25519 detached signatures, and Ed25519 message-signature bundles,
//     over a blob: Ed25519 signs the artifact itself, which cannot be
//     checked against a digest alone; use a bundle with a DSSE statement.
//   - Digests other than sha256.
package signature
