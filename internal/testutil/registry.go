package testutil

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/retry"
)

// Registry is an in-process OCI distribution registry on loopback, with
// optional basic auth.
type Registry struct {
	*httptest.Server
	Host     string // host:port, for references
	Username string
	Password string

	requests atomic.Int64
	mu       sync.Mutex
	byPath   map[string]int64 // "GET /v2/<repo>/blobs/<digest>" → requests
}

// StartRegistry starts a registry on loopback and closes it in t.Cleanup.
// When username is not empty every request must carry those basic-auth
// credentials.
func StartRegistry(t testing.TB, username, password string) *Registry {
	t.Helper()
	return StartRegistryOn(t, "127.0.0.1", username, password)
}

// StartRegistryOn is StartRegistry listening on host (an address of this
// machine), for clients in other network namespaces.
func StartRegistryOn(t testing.TB, host, username, password string) *Registry {
	t.Helper()
	r := &Registry{Username: username, Password: password, byPath: map[string]int64{}}
	inner := registry.New(registry.Logger(nopLogger()))
	r.Server = startServerOn(t, host, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		r.mu.Lock()
		r.byPath[req.Method+" "+req.URL.Path]++
		r.mu.Unlock()
		if username != "" {
			u, p, ok := req.BasicAuth()
			if !ok || u != username || p != password {
				w.Header().Set("WWW-Authenticate", `Basic realm="shimkit-test"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		inner.ServeHTTP(w, req)
	}))
	r.Host = strings.TrimPrefix(r.URL, "http://")
	t.Cleanup(r.Close)
	return r
}

// Requests returns how many requests the registry has answered.
func (r *Registry) Requests() int64 { return r.requests.Load() }

// RequestsFor returns how many requests of method and path the registry
// has answered (credentials refused included), for example
// RequestsFor("GET", "/v2/shims/spin/blobs/sha256:...") for how often a
// blob was downloaded.
func (r *Registry) RequestsFor(method, path string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byPath[method+" "+path]
}

// RequestsUnder returns how many requests of any method to paths starting
// with prefix (a repository's "/v2/<repo>/") the registry has answered.
func (r *Registry) RequestsUnder(prefix string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int64
	for k, c := range r.byPath {
		if _, path, _ := strings.Cut(k, " "); strings.HasPrefix(path, prefix) {
			n += c
		}
	}
	return n
}

// Repository returns an oras client for a repository of this registry,
// authenticated with the registry's own credentials.
func (r *Registry) Repository(t testing.TB, name string) *remote.Repository {
	t.Helper()
	repo, err := remote.NewRepository(r.Host + "/" + name)
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	repo.Client = &auth.Client{
		Client:     retry.DefaultClient,
		Credential: auth.StaticCredential(r.Host, auth.Credential{Username: r.Username, Password: r.Password}),
	}
	return repo
}

// DockerConfigJSON returns a Kubernetes .dockerconfigjson for this registry
// with the given credentials.
func (r *Registry) DockerConfigJSON(username, password string) []byte {
	type entry struct {
		Username string `json:"username"`
		Password string `json:"password"`
	}
	data, _ := json.Marshal(map[string]map[string]entry{"auths": {r.Host: {username, password}}})
	return data
}

// PlatformArtifact is one layer of a shim artifact for one platform.
type PlatformArtifact struct {
	Platform  ocispec.Platform // zero for a single-platform manifest without an index
	MediaType string
	Title     string // org.opencontainers.image.title of the layer
	Data      []byte
}

// ShimArtifactType is the artifactType the test artifacts carry.
const ShimArtifactType = "application/vnd.shimkit.shim.v1"

// PushShim pushes a shim artifact to repo:tag and returns the descriptor of
// what the tag points at: a manifest for one platform-less artifact, an image
// index otherwise.
func (r *Registry) PushShim(t testing.TB, repoName, tag string, artifacts ...PlatformArtifact) ocispec.Descriptor {
	t.Helper()
	ctx := context.Background()
	repo := r.Repository(t, repoName)
	var manifests []ocispec.Descriptor
	for _, a := range artifacts {
		layer := content.NewDescriptorFromBytes(a.MediaType, a.Data)
		if a.Title != "" {
			layer.Annotations = map[string]string{ocispec.AnnotationTitle: a.Title}
		}
		if err := repo.Push(ctx, layer, bytes.NewReader(a.Data)); err != nil {
			t.Fatalf("push layer: %v", err)
		}
		desc, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, ShimArtifactType,
			oras.PackManifestOptions{Layers: []ocispec.Descriptor{layer}})
		if err != nil {
			t.Fatalf("pack manifest: %v", err)
		}
		if a.Platform.OS != "" {
			p := a.Platform
			desc.Platform = &p
		}
		manifests = append(manifests, desc)
	}
	top := manifests[0]
	if len(artifacts) > 1 || artifacts[0].Platform.OS != "" {
		index := ocispec.Index{
			Versioned:    specs.Versioned{SchemaVersion: 2},
			MediaType:    ocispec.MediaTypeImageIndex,
			ArtifactType: ShimArtifactType,
			Manifests:    manifests,
		}
		data, err := json.Marshal(index)
		if err != nil {
			t.Fatal(err)
		}
		top = ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: digest.FromBytes(data), Size: int64(len(data))}
		if err := repo.Push(ctx, top, bytes.NewReader(data)); err != nil {
			t.Fatalf("push index: %v", err)
		}
	}
	if err := repo.Tag(ctx, top, tag); err != nil {
		t.Fatalf("tag %s: %v", tag, err)
	}
	return top
}

func nopLogger() *log.Logger { return log.New(io.Discard, "", 0) }
