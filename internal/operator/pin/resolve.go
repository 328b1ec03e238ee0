package pin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/opencontainers/go-digest"

	"github.com/shimkit/shimkit/fetch"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/signature"
)

// Resolver pins a Shim's artifact once per spec: the digest every node of
// the rollout installs, its signature verified when the spec asks for it.
type Resolver interface {
	Resolve(ctx context.Context, in Input) (*Resolved, error)
}

// Input is what a Resolver needs of a Shim.
type Input struct {
	Fetch        v1alpha1.FetchStrategy
	Verification *v1alpha1.Verification
	// TrustedRoot is the trusted_root.json that keyless verification
	// reads (from the ConfigMap the spec names).
	TrustedRoot []byte
	// DockerConfigJSON holds the registry credentials of the Shim's pull
	// secret.
	DockerConfigJSON []byte
}

// Resolved pins an artifact.
type Resolved struct {
	// Digest pins an OCI reference or anonHttp.location.
	Digest string
	// Platforms pin anonHttp.platforms.
	Platforms []v1alpha1.PlatformDigest
	// VerifiedBy names what verified the signature ("" unverified).
	VerifiedBy string
}

var (
	_ Resolver = (*ArtifactResolver)(nil)
	_ Resolver = StaticResolver(nil)
)

// ArtifactResolver is the reference operator's Resolver: an OCI reference
// is resolved with oras-go to the digest of its index or manifest; an
// HTTP artifact without sha256 is streamed once through sha256 (nothing
// is stored). With verification, the digest's signature is checked with
// package signature before the digest is returned; an HTTP artifact's
// signature is read before the artifact, which is not downloaded when its
// signature is missing.
type ArtifactResolver struct {
	// Client is the HTTP client of anonHttp artifacts and signatures;
	// nil: fetch's default (proxy variables honoured). fetch's transport
	// policy applies either way.
	Client *http.Client
	// Limits bound an HTTP artifact streamed to learn its digest.
	Limits fetch.Limits
}

// maxSignature bounds a signature document read from a URL.
const maxSignature = 1 << 20

// Resolve pins in's artifact.
func (a *ArtifactResolver) Resolve(ctx context.Context, in Input) (*Resolved, error) {
	var v *signature.Verifier
	if in.Verification != nil {
		var err error
		if v, err = signature.NewVerifier(policyOf(in.Verification, in.TrustedRoot)); err != nil {
			return nil, fmt.Errorf("spec.verification: %w", err)
		}
	}
	switch fs := in.Fetch; {
	case fs.Registry() != nil:
		return a.resolveOCI(ctx, "spec.fetchStrategy."+string(fs.Type), fs.Registry(), in.DockerConfigJSON, v)
	case fs.Type == v1alpha1.FetchAnonHTTP && fs.AnonHTTP != nil:
		return a.resolveHTTP(ctx, fs.AnonHTTP, v)
	}
	return nil, fmt.Errorf("spec.fetchStrategy: type %q without its settings", in.Fetch.Type)
}

func (a *ArtifactResolver) resolveOCI(ctx context.Context, field string, oci *v1alpha1.OCIFetch, creds []byte, v *signature.Verifier) (*Resolved, error) {
	repo, ref, err := fetch.NewRepository(oci.Reference, fetch.RegistryOptions{
		PlainHTTP: oci.PlainHTTP, Insecure: oci.Insecure, DockerConfigJSON: creds, Client: a.Client,
	})
	if err != nil {
		return nil, fmt.Errorf("%s.reference %s: %w", field, oci.Reference, err)
	}
	// One repository (one auth handshake) for the tag and its signatures.
	desc, err := fetch.ResolveIn(ctx, repo, ref)
	if err != nil {
		return nil, err
	}
	out := &Resolved{Digest: desc.Digest.String()}
	if v != nil {
		signer, err := v.VerifyOCI(ctx, repo, desc)
		if err != nil {
			return nil, fmt.Errorf("%s@%s: %w", ref.Registry+"/"+ref.Repository, desc.Digest, err)
		}
		out.VerifiedBy = signer.String()
	}
	return out, nil
}

// resolveHTTP pins the anonHttp artifact. With verification, every
// signature is read first (a few KiB each): an artifact is downloaded to
// learn its digest only when there is a signature to check it against, so
// that a missing signature costs no download.
func (a *ArtifactResolver) resolveHTTP(ctx context.Context, h *v1alpha1.AnonHTTPFetch, v *signature.Verifier) (*Resolved, error) {
	var urls []artifactURL
	if h.Location != "" {
		urls = append(urls, artifactURL{field: "spec.fetchStrategy.anonHttp", url: h.Location, sum: h.SHA256, sigURL: h.Signature})
	}
	for i, p := range h.Platforms {
		urls = append(urls, artifactURL{field: fmt.Sprintf("spec.fetchStrategy.anonHttp.platforms[%d]", i), url: p.Location, sum: p.SHA256, sigURL: p.Signature, platform: p.Platform})
	}
	if v != nil {
		for i := range urls {
			var err error
			if urls[i].sig, err = a.signatureAt(ctx, urls[i].field, urls[i].sigURL); err != nil {
				return nil, err
			}
		}
	}
	out := &Resolved{}
	for _, u := range urls {
		d, by, err := a.resolveURL(ctx, u, v)
		if err != nil {
			return nil, err
		}
		if u.platform == "" {
			out.Digest = d
		} else {
			out.Platforms = append(out.Platforms, v1alpha1.PlatformDigest{Platform: u.platform, Digest: d})
		}
		out.VerifiedBy = by
	}
	return out, nil
}

// artifactURL is one URL of an anonHttp artifact: the spec's field, its
// sha256 when the spec gives it, its signature's URL and, once read, the
// signature.
type artifactURL struct {
	field, url, sum, sigURL, platform string
	sig                               []byte
}

// signatureAt reads the signature document at sigURL. Nothing there
// (404, 410) fails with signature.ErrNotFound, which is ErrMissing.
func (a *ArtifactResolver) signatureAt(ctx context.Context, field, sigURL string) ([]byte, error) {
	f := fetch.NewHTTPFetcher(sigURL, "", fetch.Options{})
	f.Client = a.Client
	sig, err := f.Get(ctx, sigURL, maxSignature)
	switch {
	case errors.Is(err, fetch.ErrNotFound):
		return nil, fmt.Errorf("%s.signature: %w (%w)", field, signature.ErrNotFound, err)
	case err != nil:
		return nil, fmt.Errorf("%s.signature: %w", field, err)
	}
	return sig, nil
}

// resolveURL pins one URL: its sha256 when the spec gives it, else the
// digest of what it serves; then, with v, verifies u.sig (read before)
// over that digest.
func (a *ArtifactResolver) resolveURL(ctx context.Context, u artifactURL, v *signature.Verifier) (string, string, error) {
	f := fetch.NewHTTPFetcher(u.url, u.sum, fetch.Options{Limits: a.Limits})
	f.Client = a.Client
	d, _, err := f.Digest(ctx, fetch.Platform{})
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", u.field, err)
	}
	if v == nil {
		return d.String(), "", nil
	}
	signer, err := v.VerifyBlob(ctx, d, u.sig)
	if err != nil {
		return "", "", fmt.Errorf("%s %s (%s): %w", u.field, u.url, d, err)
	}
	return d.String(), signer.String(), nil
}

// policyOf turns the API's verification into the signature package's.
func policyOf(v *v1alpha1.Verification, trustedRoot []byte) signature.Policy {
	var p signature.Policy
	for _, k := range v.PublicKeys {
		p.PublicKeys = append(p.PublicKeys, []byte(k))
	}
	if k := v.Keyless; k != nil {
		p.Keyless = &signature.Keyless{Issuer: k.Issuer, Subject: k.Subject, SubjectRegExp: k.SubjectRegExp, TrustedRoot: trustedRoot}
	}
	return p
}

// StaticResolver is an in-memory Resolver for unit tests and offline
// embedders: it maps a source (an OCI reference or a URL) to its digest,
// and fails with fetch.ErrNotFound for any other. A source whose spec
// already pins it (a digest reference, a sha256) needs no entry.
type StaticResolver map[string]digest.Digest

// Resolve pins in's artifact from the map.
func (s StaticResolver) Resolve(_ context.Context, in Input) (*Resolved, error) {
	lookup := func(source, sum string) (string, error) {
		if sum != "" {
			return "sha256:" + sum, nil
		}
		if d, ok := s[source]; ok {
			return d.String(), nil
		}
		return "", fmt.Errorf("%s: %w", source, fetch.ErrNotFound)
	}
	out := &Resolved{}
	var err error
	switch fs := in.Fetch; {
	case fs.Registry() != nil:
		ref := fs.Registry().Reference
		_, pinned, _ := CutDigest(ref)
		out.Digest, err = lookup(ref, pinned)
	case fs.AnonHTTP != nil:
		if fs.AnonHTTP.Location != "" {
			if out.Digest, err = lookup(fs.AnonHTTP.Location, fs.AnonHTTP.SHA256); err != nil {
				return nil, err
			}
		}
		for _, p := range fs.AnonHTTP.Platforms {
			d, err := lookup(p.Location, p.SHA256)
			if err != nil {
				return nil, err
			}
			out.Platforms = append(out.Platforms, v1alpha1.PlatformDigest{Platform: p.Platform, Digest: d})
		}
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CutDigest splits registry/repo@sha256:<hex> into the repository and the
// hex digest.
func CutDigest(ref string) (repo, hexDigest string, ok bool) {
	repo, d, ok := strings.Cut(ref, "@sha256:")
	return repo, d, ok
}
