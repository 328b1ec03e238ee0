package source

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/opencontainers/go-digest"
	"oras.land/oras-go/v2/registry"

	"github.com/shimkit/shimkit/fetch"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/signature"
)

// SignatureVerifier is the installer's ArtifactVerifier, with package
// signature: an OCI artifact's signatures are found next to its pinned
// digest in its repository (sigstore bundle referrers, cosign's tag
// scheme); an http artifact's signature is read from SignatureURL. The
// pull secret and trusted root are read at the plan's paths.
type SignatureVerifier struct{}

// VerifyArtifact verifies a's pinned digest.
func (SignatureVerifier) VerifyArtifact(ctx context.Context, a *plan.Artifact) (string, error) {
	v, err := signature.NewVerifier(policyOf(a.Verification))
	if err != nil {
		return "", fmt.Errorf("%w: artifact.verification: %w", plan.ErrInvalid, err)
	}
	d, err := digest.Parse(a.Digest)
	if err != nil {
		return "", fmt.Errorf("%w: artifact.digest %q: %w", plan.ErrInvalid, a.Digest, err)
	}
	var signer *signature.Signer
	switch a.Type {
	case plan.SourceOCI:
		signer, err = verifyOCI(ctx, v, a, d)
	case plan.SourceHTTP:
		var sig []byte
		if sig, err = httpSignature(ctx, a); err != nil {
			return "", err
		}
		signer, err = v.VerifyBlob(ctx, d, sig)
	default:
		return "", fmt.Errorf("%w: artifact.verification: %s artifacts carry no signature", plan.ErrInvalid, a.Type)
	}
	if err != nil {
		return "", fmt.Errorf("artifact %s: %w", d, err)
	}
	return signer.String(), nil
}

// httpSignature reads an http artifact's signature at its SignatureURL.
func httpSignature(ctx context.Context, a *plan.Artifact) ([]byte, error) {
	f := fetch.NewHTTPFetcher(a.URL, "", fetch.Options{})
	sig, err := f.Get(ctx, a.SignatureURL, 1<<20)
	if err != nil {
		if errors.Is(err, fetch.ErrNotFound) {
			return nil, fmt.Errorf("%s: %w (%w)", a.SignatureURL, signature.ErrNotFound, err)
		}
		return nil, fmt.Errorf("signature %s: %w", a.SignatureURL, err)
	}
	return sig, nil
}

func verifyOCI(ctx context.Context, v *signature.Verifier, a *plan.Artifact, d digest.Digest) (*signature.Signer, error) {
	ref, err := registry.ParseReference(a.Reference)
	if err != nil {
		return nil, fmt.Errorf("%w: artifact.reference %q: %w", plan.ErrInvalid, a.Reference, err)
	}
	ref.Reference = d.String()
	o := fetch.RegistryOptions{PlainHTTP: a.PlainHTTP, Insecure: a.Insecure}
	if a.PullSecretPath != "" {
		if o.DockerConfigJSON, err = os.ReadFile(a.PullSecretPath); err != nil {
			return nil, fmt.Errorf("pull secret: %w", err)
		}
	}
	repo, pinned, err := fetch.NewRepository(ref.String(), o)
	if err != nil {
		return nil, err
	}
	desc, err := fetch.ResolveIn(ctx, repo, pinned)
	if err != nil {
		return nil, err
	}
	return v.VerifyOCI(ctx, repo, desc)
}

// policyOf reads the plan's verification, with the trusted root from its
// file.
func policyOf(pv *plan.Verification) signature.Policy {
	var p signature.Policy
	for _, k := range pv.PublicKeys {
		p.PublicKeys = append(p.PublicKeys, []byte(k))
	}
	if k := pv.Keyless; k != nil {
		root, _ := os.ReadFile(k.TrustedRootPath) // empty: NewVerifier names the field
		p.Keyless = &signature.Keyless{Issuer: k.Issuer, Subject: k.Subject, SubjectRegExp: k.SubjectRegExp, TrustedRoot: root}
	}
	return p
}
