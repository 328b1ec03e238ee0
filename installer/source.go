package installer

import (
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/opencontainers/go-digest"
	"oras.land/oras-go/v2/registry"

	"github.com/shimkit/shimkit/fetch"
	"github.com/shimkit/shimkit/installer/plan"
)

// fetcherFor builds the Fetcher of a plan's artifact, sharing the node's
// artifact cache (verified artifacts by digest, under the state
// directory), so that the same artifact is never downloaded twice and the
// installer's image needs no /tmp.
func fetcherFor(i *Installer, a *plan.Artifact) (fetch.Fetcher, error) {
	if i.Fetcher != nil {
		return i.Fetcher, nil
	}
	cache, err := fetch.NewCache(i.paths().local(path.Join(i.paths().stateDir(), "cache")))
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
	return nil, fmt.Errorf("%w: artifact type %q", plan.ErrInvalid, a.Type)
}
