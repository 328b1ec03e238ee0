package fetch

import (
	"errors"
	"fmt"
	"net/http"

	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/errcode"
)

// RegistryOptions say how to talk to an OCI registry.
type RegistryOptions struct {
	// PlainHTTP talks HTTP instead of HTTPS. It is allowed only to a
	// LocalRegistry unless Insecure is set; otherwise it fails with
	// ErrInsecure before any request.
	PlainHTTP bool
	// Insecure allows PlainHTTP to any registry. Anyone on the path can
	// then change what is fetched, unless its digest is pinned.
	Insecure bool
	// DockerConfigJSON is the .dockerconfigjson of a Kubernetes pull
	// secret; empty talks to the registry anonymously.
	DockerConfigJSON []byte
	// Client is the base HTTP client (its transport, TLS configuration,
	// timeout); nil uses one that honours the proxy environment. It is
	// copied, never changed: the copy gets the redirect policy (chained to
	// the client's own CheckRedirect) and a retry transport over the
	// client's transport.
	Client *http.Client
}

// NewRepository returns an oras-go client for the repository of
// reference (registry/repository[:tag|@digest]) and the parsed reference.
// Every request carries the User-Agent shimkit-fetch and the credentials
// of DockerConfigJSON; 5xx, 408 and 429 answers and dial timeouts are
// retried with backoff; a redirect from https to http fails with
// ErrInsecure and more than 10 redirects with ErrTooManyRedirects, for
// manifests and for blobs redirected to storage alike. PlainHTTP to a
// registry that is not a LocalRegistry, without Insecure, fails here with
// ErrInsecure.
//
// URLs in errors lose their query (see redactingClient); as repo.Client
// is then not a bare *auth.Client, push manifests with a rewindable body
// (bytes.Reader) if the registry asks for credentials. Without o.Client
// the repository has a client of its own, whose idle connections close
// after 90 seconds.
func NewRepository(reference string, o RegistryOptions) (*remote.Repository, registry.Reference, error) {
	repo, ref, _, err := newRepository(reference, o)
	return repo, ref, err
}

// newRepository is NewRepository, with a function that releases the idle
// connections of a client made here.
func newRepository(reference string, o RegistryOptions) (*remote.Repository, registry.Reference, func(), error) {
	ref, err := registry.ParseReference(reference)
	if err != nil {
		return nil, registry.Reference{}, nil, fmt.Errorf("%s: %w", reference, err)
	}
	if o.PlainHTTP && !o.Insecure && !LocalRegistry(ref.Registry) {
		return nil, ref, nil, fmt.Errorf("%s: %w: plain HTTP to %s, which is neither loopback nor cluster-local (allow it with Insecure)", reference, ErrInsecure, ref.Registry)
	}
	repo, err := remote.NewRepository(ref.Registry + "/" + ref.Repository)
	if err != nil {
		return nil, ref, nil, fmt.Errorf("%s: %w", reference, err)
	}
	repo.PlainHTTP = o.PlainHTTP
	httpClient, release := registryHTTPClient(o.Client)
	client := &auth.Client{Client: httpClient, Cache: auth.NewCache(), Header: http.Header{"User-Agent": {userAgent}}}
	if len(o.DockerConfigJSON) > 0 {
		store, err := credentials.NewMemoryStoreFromDockerConfig(o.DockerConfigJSON)
		if err != nil {
			release()
			return nil, ref, nil, fmt.Errorf("%s: pull secret: %w", reference, err)
		}
		client.Credential = credentials.Credential(store)
	}
	repo.Client = redactingClient{client}
	return repo, ref, release, nil
}

// redactingClient drops the query from the URL an error names before oras
// wraps it: net/http names the target of a failed request or refused
// redirect, and a blob redirected to storage carries a signature that
// grants access in its query.
type redactingClient struct{ remote.Client }

func (c redactingClient) Do(req *http.Request) (*http.Response, error) {
	resp, err := c.Client.Do(req)
	return resp, redactURLError(err)
}

// registryError maps a registry's 401/403/404 to the package's sentinels.
func registryError(err error) error {
	if errors.Is(err, auth.ErrBasicCredentialNotFound) {
		return fmt.Errorf("%w (no credentials for it): %w", ErrUnauthorized, err)
	}
	if errors.Is(err, errdef.ErrNotFound) {
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	var resp *errcode.ErrorResponse
	if errors.As(err, &resp) {
		switch resp.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Errorf("%w: %w", ErrUnauthorized, err)
		case http.StatusNotFound:
			return fmt.Errorf("%w: %w", ErrNotFound, err)
		}
	}
	return err
}
