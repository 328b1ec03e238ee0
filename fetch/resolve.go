package fetch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
)

// defaultGetLimit bounds Get when the caller gives no limit.
const defaultGetLimit = 1 << 20

// ResolveOCI returns the descriptor a tag or digest reference resolves to
// now: an image index or an image manifest (OCI or Docker); anything else
// is refused. Its digest pins the artifact for OCIFetcher (reference
// @digest), so that every node installs the same one even when the tag
// moves. A digest reference resolves to itself once the registry has
// confirmed it has the manifest. The registry's "not found" and refused
// credentials fail with ErrNotFound and ErrUnauthorized; the transport is
// NewRepository's.
func ResolveOCI(ctx context.Context, reference string, o RegistryOptions) (ocispec.Descriptor, error) {
	repo, ref, release, err := newRepository(reference, o)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("resolve %w", err)
	}
	defer release()
	return ResolveIn(ctx, repo, ref)
}

// ResolveIn is ResolveOCI in a repository NewRepository made, for callers
// that go on using it (to verify the digest's signatures, say).
func ResolveIn(ctx context.Context, repo *remote.Repository, ref registry.Reference) (ocispec.Descriptor, error) {
	desc, err := repo.Resolve(ctx, ref.ReferenceOrDefault())
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("resolve %s: %w", ref, registryError(err))
	}
	switch desc.MediaType {
	case ocispec.MediaTypeImageIndex, ocispec.MediaTypeImageManifest, mediaTypeDockerList, mediaTypeDockerSchema:
		return desc, nil
	}
	return ocispec.Descriptor{}, fmt.Errorf("resolve %s: %s has media type %q, not an image index or manifest", ref, desc.Digest, desc.MediaType)
}

// Digest returns the sha256 and size of the platform's artifact, to pin
// it before any node fetches it.
//
// When the artifact has a SHA256, that is its digest, and Digest returns
// it without any request (the size is the cached copy's, or -1): the
// download that would confirm it is the one every Fetch makes anyway, and
// Fetch refuses an artifact that does not match.
//
// Otherwise the artifact is downloaded once and streamed through sha256:
// nothing is stored on disk and memory stays bounded, whatever its size.
// The download is the one Fetch makes: Limits.MaxDownload (ErrTooLarge),
// retries of 5xx answers and timeouts only, the redirect policy
// (ErrInsecure, ErrTooManyRedirects), the Progress callback.
func (f *HTTPFetcher) Digest(ctx context.Context, p Platform) (digest.Digest, int64, error) {
	a, err := f.pick(p)
	if err != nil {
		return "", 0, err
	}
	if a.SHA256 != "" {
		d := digest.NewDigestFromEncoded(digest.SHA256, a.SHA256)
		if err := d.Validate(); err != nil {
			return "", 0, fmt.Errorf("digest %s: sha256 %q: %w", a.URL, a.SHA256, err)
		}
		if f.Cache != nil {
			if b, ok := f.Cache.cachedBlob(d); ok {
				return d, b.size, nil
			}
		}
		return d, -1, nil
	}
	var (
		d digest.Digest
		n int64
	)
	limit := f.Limits.withDefaults().MaxDownload
	err = f.get(ctx, a.URL, limit, func(body io.Reader, size int64) (err error) {
		h := sha256.New()
		if n, err = copyLimited(ctx, h, body, size, limit, f.Progress); err != nil {
			return err
		}
		d = digestOf(h)
		return nil
	})
	if err != nil {
		return "", 0, fmt.Errorf("digest %s: %w", a.URL, err)
	}
	return d, n, nil
}

// Get downloads a small document, such as the signature or sigstore
// bundle published next to an artifact, into memory: with the fetcher's
// client, retries and redirect policy. A 404 or 410 fails with ErrNotFound
// (its message names the URL and the status, not "artifact": the caller
// says what is missing), a body over limit bytes (limit <= 0: 1 MiB) with
// ErrTooLarge.
func (f *HTTPFetcher) Get(ctx context.Context, rawURL string, limit int64) ([]byte, error) {
	if limit <= 0 {
		limit = defaultGetLimit
	}
	var buf bytes.Buffer
	err := f.get(ctx, rawURL, limit, func(body io.Reader, size int64) error {
		buf.Reset()
		_, err := copyLimited(ctx, &buf, body, size, limit, nil)
		return err
	})
	if nf := (notFoundError{}); errors.As(err, &nf) {
		nf.document = true
		err = nf
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", rawURL, err)
	}
	return buf.Bytes(), nil
}
