package testutil_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/memory"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"
	"oras.land/oras-go/v2/registry/remote/retry"

	"github.com/shimkit/shimkit/internal/testutil"
)

const layerType = "application/vnd.oci.image.layer.v1.tar+gzip"

func TestFileServerServesShimArchive(t *testing.T) {
	a := testutil.NewShimArchive(t, "demo", "/usr/bin/containerd-shim-runc-v2", nil)
	srv := testutil.StartFileServer(t)
	url := srv.Add("/demo.tar.gz", a.Data)
	srv.Inject("/demo.tar.gz", testutil.Fault{Status: http.StatusServiceUnavailable})

	get := func() (int, []byte) {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, body
	}
	if code, _ := get(); code != http.StatusServiceUnavailable {
		t.Fatalf("first request: status %d, want injected 503", code)
	}
	code, body := get()
	if code != http.StatusOK || testutil.SHA256Hex(body) != a.SHA256 {
		t.Fatalf("second request: status %d, sha256 %s, want 200 and %s", code, testutil.SHA256Hex(body), a.SHA256)
	}
	if srv.Requests() != 2 {
		t.Errorf("requests = %d, want 2", srv.Requests())
	}
}

func TestRegistryWithBasicAuth(t *testing.T) {
	ctx := context.Background()
	a := testutil.NewShimArchive(t, "demo", "/usr/bin/containerd-shim-runc-v2", nil)
	reg := testutil.StartRegistry(t, "alice", "s3cret")
	top := reg.PushShim(t, "shims/demo", "v1",
		testutil.PlatformArtifact{Platform: ocispec.Platform{OS: "linux", Architecture: "amd64"}, MediaType: layerType, Title: "demo.tar.gz", Data: a.Data},
		testutil.PlatformArtifact{Platform: ocispec.Platform{OS: "linux", Architecture: "arm64"}, MediaType: layerType, Title: "demo.tar.gz", Data: a.Data},
	)
	if top.MediaType != ocispec.MediaTypeImageIndex {
		t.Fatalf("tag points at %s, want an index", top.MediaType)
	}

	store := memory.New()
	got, err := oras.Copy(ctx, reg.Repository(t, "shims/demo"), "v1", store, "v1", oras.DefaultCopyOptions)
	if err != nil {
		t.Fatalf("pull with the right password: %v", err)
	}
	if got.Digest != top.Digest {
		t.Errorf("pulled %s, want %s", got.Digest, top.Digest)
	}
	layer := ocispec.Descriptor{MediaType: layerType, Digest: digest.NewDigestFromEncoded(digest.SHA256, a.SHA256), Size: int64(len(a.Data))}
	data, err := content.FetchAll(ctx, store, layer)
	if err != nil || testutil.SHA256Hex(data) != a.SHA256 {
		t.Fatalf("layer in store: %v", err)
	}

	wrong := reg.Repository(t, "shims/demo")
	wrong.Client = &auth.Client{Client: retry.DefaultClient, Credential: auth.StaticCredential(reg.Host, auth.Credential{Username: "alice", Password: "wrong"})}
	_, err = oras.Copy(ctx, wrong, "v1", memory.New(), "v1", oras.DefaultCopyOptions)
	var resp *errcode.ErrorResponse
	if !errors.As(err, &resp) || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("pull with a wrong password: %v, want 401", err)
	}
}
