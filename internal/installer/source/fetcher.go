package source

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/opencontainers/go-digest"
	"oras.land/oras-go/v2/registry"

	"github.com/shimkit/shimkit/fetch"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/installer/layout"
)

// Into returns what fetches the artifact into a directory: with f, else
// the fetcher of the artifact's source (built when called), for platform
// (zero: the node's).
func Into(l layout.Layout, a *plan.Artifact, f fetch.Fetcher, platform fetch.Platform) func(ctx context.Context, dir string) (*fetch.Result, error) {
	return func(ctx context.Context, dir string) (*fetch.Result, error) {
		if f == nil {
			var err error
			if f, err = Fetcher(l, a); err != nil {
				return nil, err
			}
		}
		if platform.IsZero() {
			platform = fetch.HostPlatform()
		}
		return f.Fetch(ctx, platform, dir)
	}
}

// Fetcher builds the Fetcher of a plan's artifact, sharing the node's
// artifact cache (verified artifacts by digest, under the state
// directory), so that the same artifact is never downloaded twice and the
// installer's image needs no /tmp.
func Fetcher(l layout.Layout, a *plan.Artifact) (fetch.Fetcher, error) {
	cache, err := fetch.NewCache(l.CachePath())
	if err != nil {
		return nil, err
	}
	// Which files become executable is the plan's to say (File.Mode), not
	// a name pattern's; staging is private until the bundle is laid out.
	opts := fetch.Options{Cache: cache, Executables: "*"}
	sum := strings.TrimPrefix(a.Digest, "sha256:")
	switch a.Type {
	case plan.SourceHTTP:
		return fetch.NewHTTPFetcher(a.URL, sum, opts), nil
	case plan.SourceFile:
		return &fetch.LocalFetcher{Path: a.Path, SHA256: sum, Options: opts}, nil
	case plan.SourceImage:
		return &fetch.DirFetcher{Path: a.Path, Digest: digest.Digest(a.Digest), Options: opts}, nil
	case plan.SourceOCI:
		return ociFetcher(a, opts)
	}
	return nil, fmt.Errorf("%w: artifact type %q", plan.ErrInvalid, a.Type)
}

// ociFetcher fetches an OCI artifact by its pinned digest, when it has
// one, with the plan's pull secret.
func ociFetcher(a *plan.Artifact, opts fetch.Options) (*fetch.OCIFetcher, error) {
	ref := a.Reference
	if a.Digest != "" {
		r, err := registry.ParseReference(a.Reference)
		if err != nil {
			return nil, fmt.Errorf("%w: artifact.reference %q: %w", plan.ErrInvalid, a.Reference, err)
		}
		r.Reference = a.Digest
		ref = r.String()
	}
	o := &fetch.OCIFetcher{Reference: ref, PlainHTTP: a.PlainHTTP, Insecure: a.Insecure, Options: opts}
	if a.PullSecretPath != "" {
		data, err := os.ReadFile(a.PullSecretPath)
		if err != nil {
			return nil, fmt.Errorf("pull secret: %w", err)
		}
		o.DockerConfigJSON = data
	}
	return o, nil
}
