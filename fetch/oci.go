package fetch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
)

// Layer media types that can hold a shim.
const (
	MediaTypeShimLayer    = "application/vnd.shimkit.shim.layer.v1.tar+gzip"
	MediaTypeDockerLayer  = "application/vnd.docker.image.rootfs.diff.tar.gzip"
	MediaTypeOctetStream  = "application/octet-stream" // a bare binary pushed with `oras push`
	mediaTypeDockerList   = "application/vnd.docker.distribution.manifest.list.v2+json"
	mediaTypeDockerSchema = "application/vnd.docker.distribution.manifest.v2+json"
)

// DefaultLayerMediaTypes are the layers a fetch takes when none are named:
// shimkit's own, OCI and Docker image layers, and bare binaries.
func DefaultLayerMediaTypes() []string {
	return []string{MediaTypeShimLayer, ocispec.MediaTypeImageLayerGzip, ocispec.MediaTypeImageLayer, MediaTypeDockerLayer, MediaTypeOctetStream}
}

// OCIFetcher pulls a shim artifact from an OCI registry with oras-go. The
// reference is a tag (which may move) or a digest (which pins the
// artifact). From an image index it picks the manifest of the node's
// platform; from the manifest it takes the layers whose media type is
// listed. Every manifest and layer is verified against its digest: layers
// by hashing them into the cache, manifests with content.FetchAll. The
// registry client is NewRepository's: plain HTTP only to a LocalRegistry
// (or with Insecure), no redirect from https to http, at most 10
// redirects.
type OCIFetcher struct {
	// Reference is registry/repository:tag or registry/repository@sha256:...
	Reference string
	// PlainHTTP talks HTTP instead of HTTPS: allowed to a LocalRegistry,
	// and to others only with Insecure (ErrInsecure otherwise).
	PlainHTTP bool
	// Insecure allows PlainHTTP to any registry.
	Insecure bool
	// DockerConfigJSON is the .dockerconfigjson of a Kubernetes pull secret;
	// empty pulls anonymously.
	DockerConfigJSON []byte
	// Client is the base HTTP client (see RegistryOptions.Client); nil
	// uses one that honours the proxy environment.
	Client *http.Client
	// MediaTypes are the layer media types to take; default
	// DefaultLayerMediaTypes().
	MediaTypes []string
	Options
}

// registryOptions are the fetcher's registry settings.
func (f *OCIFetcher) registryOptions() RegistryOptions {
	return RegistryOptions{PlainHTTP: f.PlainHTTP, Insecure: f.Insecure, DockerConfigJSON: f.DockerConfigJSON, Client: f.Client}
}

// Fetch resolves the reference, picks the platform, and extracts the
// matching layers into dest.
func (f *OCIFetcher) Fetch(ctx context.Context, p Platform, dest string) (*Result, error) {
	repo, ref, release, err := newRepository(f.Reference, f.registryOptions())
	if err != nil {
		return nil, fmt.Errorf("fetch %w", err)
	}
	defer release()
	res, err := fetchOCI(ctx, repo, ref.ReferenceOrDefault(), p, dest, f.Options, f.MediaTypes)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", f.Reference, registryError(err))
	}
	return res, nil
}

// fetchOCI works on any OCI target: a remote repository or a local OCI
// image layout.
func fetchOCI(ctx context.Context, target oras.ReadOnlyTarget, reference string, p Platform, dest string, o Options, mediaTypes []string) (*Result, error) {
	top, err := target.Resolve(ctx, reference)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", reference, err)
	}
	manifestDesc := top
	if top.MediaType == ocispec.MediaTypeImageIndex || top.MediaType == mediaTypeDockerList {
		if manifestDesc, err = pickPlatform(ctx, target, top, p); err != nil {
			return nil, err
		}
	}
	data, err := content.FetchAll(ctx, target, manifestDesc)
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", manifestDesc.Digest, err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("manifest %s: %w", manifestDesc.Digest, err)
	}
	if len(mediaTypes) == 0 {
		mediaTypes = DefaultLayerMediaTypes()
	}
	var layers []ocispec.Descriptor
	for _, l := range m.Layers {
		if slices.Contains(mediaTypes, l.MediaType) {
			layers = append(layers, l)
		}
	}
	if len(layers) == 0 {
		return nil, fmt.Errorf("%w: manifest %s has no layer of type %v", ErrNoShim, manifestDesc.Digest, mediaTypes)
	}

	cache, done, err := tempCache(o.Cache)
	if err != nil {
		return nil, err
	}
	defer done()
	limit := o.Limits.withDefaults().MaxDownload
	res := &Result{Digest: top.Digest, Cached: true}
	for _, l := range layers {
		if l.Size > limit {
			return nil, fmt.Errorf("layer %s: %w: %d bytes, limit %d", l.Digest, ErrTooLarge, l.Size, limit)
		}
		b, err := cache.do(l.Digest.String(), func() (blob, error) {
			if b, ok := cache.cachedBlob(l.Digest); ok {
				return b, nil
			}
			rc, err := target.Fetch(ctx, l)
			if err != nil {
				return blob{}, err
			}
			defer rc.Close()
			return cache.ingest(ctx, rc, l.Digest, l.Size, limit, o.Progress)
		})
		if err != nil {
			return nil, fmt.Errorf("layer %s: %w", l.Digest, err)
		}
		name := o.BinaryName
		if name == "" {
			name = l.Annotations[ocispec.AnnotationTitle]
		}
		files, execs, err := extract(b.path, dest, name, o)
		if err != nil {
			return nil, fmt.Errorf("layer %s: %w", l.Digest, err)
		}
		res.Files = append(res.Files, files...)
		res.Executables = append(res.Executables, execs...)
		res.Size += b.size
		res.Cached = res.Cached && b.cached
	}
	slices.Sort(res.Files)
	slices.Sort(res.Executables)
	return res, nil
}

// pickPlatform chooses the manifest for p from an index.
func pickPlatform(ctx context.Context, target oras.ReadOnlyTarget, index ocispec.Descriptor, p Platform) (ocispec.Descriptor, error) {
	data, err := content.FetchAll(ctx, target, index)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("index %s: %w", index.Digest, err)
	}
	var idx ocispec.Index
	if err := json.Unmarshal(data, &idx); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("index %s: %w", index.Digest, err)
	}
	var have []string
	for _, m := range idx.Manifests {
		if m.Platform == nil {
			continue
		}
		q := Platform{OS: m.Platform.OS, Architecture: m.Platform.Architecture}
		have = append(have, q.String())
		if p.matches(q) && (m.MediaType == ocispec.MediaTypeImageManifest || m.MediaType == mediaTypeDockerSchema) {
			return m, nil
		}
	}
	return ocispec.Descriptor{}, fmt.Errorf("%w %s in index %s (it has %v)", ErrPlatform, p, index.Digest, have)
}
