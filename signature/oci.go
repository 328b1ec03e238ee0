package signature

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
)

// Media types and names of the sigstore and cosign formats.
const (
	// bundle media types, as OCI artifactType and layer media type
	bundleV01MediaType = "application/vnd.dev.sigstore.bundle+json;version=0.1"
	bundleV02MediaType = "application/vnd.dev.sigstore.bundle+json;version=0.2"
	bundleV03MediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"
	// predicateAnnotation is set by cosign 3 on a bundle referrer.
	predicateAnnotation = "dev.sigstore.bundle.predicateType"
	// cosignSignPredicate is the predicate type of a cosign 3 signature
	// (as opposed to an attestation: provenance, SBOM, scan results...).
	cosignSignPredicate = "https://sigstore.dev/cosign/sign/v1"

	// The cosign tag scheme ("sha256-<hex>.sig").
	simpleSigningMediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	signatureAnnotation    = "dev.cosignproject.cosign/signature"
	certificateAnnotation  = "dev.sigstore.cosign/certificate"
	simpleSigningType      = "cosign container image signature"
)

func isBundleMediaType(mt string) bool {
	switch mt {
	case bundleV01MediaType, bundleV02MediaType, bundleV03MediaType:
		return true
	}
	return false
}

// Repository is what VerifyOCI reads; *remote.Repository (oras-go)
// satisfies it.
type Repository interface {
	content.Fetcher         // manifests and blobs, by descriptor
	content.Resolver        // the cosign tag scheme: tag sha256-<hex>.sig
	registry.ReferrerLister // sigstore bundle referrers of the subject
}

var _ Repository = (*remote.Repository)(nil)

// VerifyOCI finds signatures of subject (a manifest or image index
// descriptor, as the tag resolved) in repo and returns the signer of the
// first that verifies. Sigstore bundle referrers of subject (cosign 3) are
// tried first, then the cosign tag scheme (tag sha256-<hex>.sig, keys
// only). It fails with ErrMissing when neither exists, with ErrInvalid
// saying why each candidate failed when none verifies, and with the
// registry's error when nothing could be read.
func (v *Verifier) VerifyOCI(ctx context.Context, repo Repository, subject ocispec.Descriptor) (*Signer, error) {
	if err := checkDigest(subject.Digest); err != nil {
		return nil, fmt.Errorf("subject: %w", err)
	}
	var a attempts
	refs, err := bundleReferrers(ctx, repo, subject)
	if err != nil {
		a.unreadable("listing referrers", err)
	}
	for _, ref := range refs {
		what := "referrer " + ref.Digest.String()
		data, err := bundleOfReferrer(ctx, repo, ref)
		if err == nil {
			var signer *Signer
			if signer, err = v.verifyBundle(data, subject.Digest); err == nil {
				return signer, nil
			}
		}
		a.record(what, err)
	}
	if signer := v.verifyTagScheme(ctx, repo, subject.Digest, &a); signer != nil {
		return signer, nil
	}
	return nil, a.err("signature of "+subject.Digest.String(),
		"no sigstore bundle referrer and no tag "+sigTag(subject.Digest))
}

// errEnough stops a referrers listing early.
var errEnough = errors.New("enough referrers")

// bundleReferrers lists up to maxCandidates referrers of subject that may
// be cosign signature bundles, reading at most maxPages pages.
func bundleReferrers(ctx context.Context, repo Repository, subject ocispec.Descriptor) ([]ocispec.Descriptor, error) {
	var out []ocispec.Descriptor
	pages := 0
	err := repo.Referrers(ctx, subject, "", func(refs []ocispec.Descriptor) error {
		for _, r := range refs {
			if !maybeBundle(r.ArtifactType) {
				continue // an SBOM, a signature of another kind...
			}
			if p, ok := r.Annotations[predicateAnnotation]; ok && p != cosignSignPredicate {
				continue // an attestation, not a signature
			}
			if out = append(out, r); len(out) == maxCandidates {
				return errEnough
			}
		}
		if pages++; pages == maxPages {
			return errEnough
		}
		return nil
	})
	if errors.Is(err, errEnough) || errors.Is(err, errdef.ErrNotFound) {
		err = nil
	}
	return out, err
}

// maybeBundle says whether a referrer of this artifactType may hold a
// sigstore bundle. Some registries report the config media type, the empty
// one for cosign 3, as the draft OCI 1.1 said; some report nothing.
func maybeBundle(artifactType string) bool {
	return artifactType == "" || artifactType == ocispec.MediaTypeEmptyJSON || isBundleMediaType(artifactType)
}

// bundleOfReferrer reads the bundle layer of a referrer manifest.
func bundleOfReferrer(ctx context.Context, repo Repository, ref ocispec.Descriptor) ([]byte, error) {
	data, err := readDocument(ctx, repo, ref)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	for _, l := range m.Layers {
		if isBundleMediaType(l.MediaType) {
			return readDocument(ctx, repo, l)
		}
	}
	return nil, errors.New("no layer holds a sigstore bundle")
}

func sigTag(d digest.Digest) string {
	return d.Algorithm().String() + "-" + d.Encoded() + ".sig"
}

// verifyTagScheme checks the cosign tag-scheme signature of d, recording
// failures in a; nil when none verifies.
func (v *Verifier) verifyTagScheme(ctx context.Context, repo Repository, d digest.Digest, a *attempts) *Signer {
	tag := sigTag(d)
	what := "tag " + tag
	desc, err := repo.Resolve(ctx, tag)
	if errors.Is(err, errdef.ErrNotFound) {
		return nil
	}
	if err != nil {
		a.unreadable(what, err)
		return nil
	}
	data, err := readDocument(ctx, repo, desc)
	if err != nil {
		a.record(what, err)
		return nil
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		a.fail(what, fmt.Errorf("manifest: %w", err))
		return nil
	}
	tried := 0
	for i, l := range m.Layers {
		if l.MediaType != simpleSigningMediaType {
			continue
		}
		if tried++; tried > maxCandidates {
			break
		}
		signer, err := v.verifySimpleSigning(ctx, repo, l, d)
		if err == nil {
			return signer
		}
		a.record(fmt.Sprintf("%s layer %d", what, i), err)
	}
	if tried == 0 {
		a.fail(what, errors.New("no "+simpleSigningMediaType+" layer"))
	}
	return nil
}

// verifySimpleSigning checks one layer of the cosign tag scheme: the
// signature annotation over the layer's bytes by a key of the policy, and
// the payload naming d.
func (v *Verifier) verifySimpleSigning(ctx context.Context, repo Repository, layer ocispec.Descriptor, d digest.Digest) (*Signer, error) {
	sigText, ok := layer.Annotations[signatureAnnotation]
	if !ok {
		return nil, errors.New("no " + signatureAnnotation + " annotation")
	}
	if len(v.keys) == 0 {
		if _, cert := layer.Annotations[certificateAnnotation]; cert {
			return nil, errors.New("keyless signatures of the cosign tag scheme are not supported: keyless needs a sigstore bundle")
		}
		return nil, errors.New("the cosign tag scheme is checked with public keys only, the policy has none")
	}
	sig, err := base64.StdEncoding.DecodeString(strings.TrimSpace(sigText))
	if err != nil {
		return nil, fmt.Errorf("%s annotation: %w", signatureAnnotation, err)
	}
	payload, err := readDocument(ctx, repo, layer)
	if err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	var signer *trustedKey
	for _, k := range v.keys {
		if k.verifier.VerifySignature(bytes.NewReader(sig), bytes.NewReader(payload)) == nil {
			signer = k
			break
		}
	}
	if signer == nil {
		return nil, fmt.Errorf("signed by none of the policy's %d public keys", len(v.keys))
	}
	var p struct {
		Critical struct {
			Image struct {
				Digest string `json:"docker-manifest-digest"`
			} `json:"image"`
			Type string `json:"type"`
		} `json:"critical"`
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	if p.Critical.Type != simpleSigningType {
		return nil, fmt.Errorf("payload type %q is not %q", p.Critical.Type, simpleSigningType)
	}
	if p.Critical.Image.Digest != d.String() {
		return nil, fmt.Errorf("payload signs %s, not %s", p.Critical.Image.Digest, d)
	}
	return &Signer{Description: signer.name}, nil
}

// unreadableError marks a failure to read from the registry (a transport
// error, a missing blob), as opposed to content that is there and wrong.
type unreadableError struct{ err error }

func (e *unreadableError) Error() string { return e.err.Error() }
func (e *unreadableError) Unwrap() error { return e.err }

// readDocument reads a manifest or a small blob, at most maxDocument bytes,
// and checks its size and digest against desc.
func readDocument(ctx context.Context, f content.Fetcher, desc ocispec.Descriptor) ([]byte, error) {
	if desc.Size < 0 || desc.Size > maxDocument {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d allowed", desc.Digest, desc.Size, maxDocument)
	}
	if err := desc.Digest.Validate(); err != nil {
		return nil, fmt.Errorf("descriptor digest %q: %w", desc.Digest, err)
	}
	rc, err := f.Fetch(ctx, desc)
	if err != nil {
		return nil, &unreadableError{fmt.Errorf("fetching %s: %w", desc.Digest, err)}
	}
	defer rc.Close()
	data, err := content.ReadAll(rc, desc)
	switch {
	case errors.Is(err, content.ErrMismatchedDigest), errors.Is(err, content.ErrTrailingData):
		return nil, fmt.Errorf("reading %s: %w", desc.Digest, err)
	case err != nil:
		return nil, &unreadableError{fmt.Errorf("reading %s: %w", desc.Digest, err)}
	}
	return data, nil
}
