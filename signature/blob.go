package signature

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/opencontainers/go-digest"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/verify"
)

// VerifyBlob checks sig over the artifact whose sha256 is d; the artifact
// itself is not needed. sig is a sigstore bundle (JSON), or a detached
// signature over the artifact, base64 text or raw bytes, as cosign
// sign-blob --output-signature writes it. A detached signature is checked
// with the policy's public keys (ECDSA, RSA); an Ed25519 one cannot be
// checked against a digest and fails with ErrInvalid saying so. An empty
// sig fails with ErrMissing.
func (v *Verifier) VerifyBlob(ctx context.Context, d digest.Digest, sig []byte) (*Signer, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkDigest(d); err != nil {
		return nil, err
	}
	subject := "signature of blob " + d.String()
	trimmed := bytes.TrimSpace(sig)
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("%s: %w: empty", subject, ErrMissing)
	}
	if len(sig) > maxDocument {
		return nil, fmt.Errorf("%s: %w: %d bytes, more than the %d allowed", subject, ErrInvalid, len(sig), maxDocument)
	}
	var a attempts
	if json.Valid(trimmed) {
		signer, err := v.verifyBundle(trimmed, d)
		if err == nil {
			return signer, nil
		}
		a.fail("sigstore bundle", err)
		return nil, a.err(subject, "")
	}
	raw := sig
	if decoded, err := base64.StdEncoding.DecodeString(string(trimmed)); err == nil {
		raw = decoded
	}
	signer, err := v.verifyDetached(raw, d)
	if err == nil {
		return signer, nil
	}
	a.fail("detached signature", err)
	return nil, a.err(subject, "")
}

// verifyDetached checks a raw signature over the artifact of sha256 d with
// each public key of the policy.
func (v *Verifier) verifyDetached(sig []byte, d digest.Digest) (*Signer, error) {
	if len(v.keys) == 0 {
		return nil, errors.New("a detached signature carries no certificate: keyless verification needs a sigstore bundle")
	}
	sum, err := hex.DecodeString(d.Encoded())
	if err != nil {
		return nil, err
	}
	reasons := make([]string, 0, len(v.keys))
	for _, k := range v.keys {
		err := k.verifyDigest(sig, sum)
		if err == nil {
			return &Signer{Description: k.name}, nil
		}
		reasons = append(reasons, k.name+": "+err.Error())
	}
	if v.keyless != nil {
		reasons = append(reasons, "keyless: a detached signature carries no certificate, use a sigstore bundle")
	}
	return nil, errors.New(strings.Join(reasons, "; "))
}

// verifyBundle checks a sigstore bundle (JSON) for the artifact of sha256
// d: a DSSE envelope whose in-toto statement is a cosign signature naming
// d as a subject, or a message signature over d; signed by a key of the
// policy, or by its keyless identity with the trust its trusted root needs.
func (v *Verifier) verifyBundle(data []byte, d digest.Digest) (*Signer, error) {
	b := &bundle.Bundle{}
	if err := b.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("not a sigstore bundle: %w", err)
	}
	sum, err := hex.DecodeString(d.Encoded())
	if err != nil {
		return nil, err
	}
	artifact := verify.WithArtifactDigest("sha256", sum)
	vc, err := b.VerificationContent()
	if err != nil {
		return nil, err
	}
	if vc.Certificate() == nil {
		if len(v.keys) == 0 {
			return nil, errors.New("signed with a public key, the policy trusts only a keyless identity")
		}
		reasons := make([]string, 0, len(v.keys))
		for _, k := range v.keys {
			res, err := k.bundles.Verify(b, verify.NewPolicy(artifact, verify.WithKey()))
			if err == nil {
				err = checkStatement(res)
			}
			if err == nil {
				return &Signer{Description: k.name}, nil
			}
			reasons = append(reasons, k.name+": "+err.Error())
		}
		return nil, errors.New(strings.Join(reasons, "; "))
	}
	if v.keyless == nil {
		return nil, errors.New("signed keylessly (with a certificate), the policy trusts only public keys")
	}
	res, err := v.keyless.verifier.Verify(b, verify.NewPolicy(artifact, verify.WithCertificateIdentity(v.keyless.identity)))
	if err == nil {
		err = checkStatement(res)
	}
	if err != nil {
		return nil, fmt.Errorf("keyless: %w", err)
	}
	c := res.Signature.Certificate
	return &Signer{Description: "keyless " + c.Issuer + " " + c.SubjectAlternativeName}, nil
}

// checkStatement refuses attestations: a key that signs provenance or a
// vulnerability report for a digest does not thereby sign the artifact.
func checkStatement(res *verify.VerificationResult) error {
	if res.Statement == nil {
		return nil // a message signature over the digest itself
	}
	if p := res.Statement.GetPredicateType(); p != cosignSignPredicate {
		return fmt.Errorf("statement of predicate type %q is an attestation, not a signature (%s)", p, cosignSignPredicate)
	}
	return nil
}
