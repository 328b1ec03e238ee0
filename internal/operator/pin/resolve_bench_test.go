package pin_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/shimkit/shimkit/fetch"
	"github.com/shimkit/shimkit/internal/operator/pin"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/internal/testutil/signtest"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// BenchmarkResolveVerify100MiB: the operator pins an HTTP artifact of 100
// MiB without sha256 (streaming it once through sha256) and verifies its
// sigstore bundle, as it does once per spec.
func BenchmarkResolveVerify100MiB(b *testing.B) {
	body := bytes.Repeat([]byte("shimkit!"), 100<<20/8)
	sum := sha256.Sum256(body)
	d := digest.NewDigestFromBytes(digest.SHA256, sum[:])
	key := signtest.NewSigningKey(b)
	bundle := key.SignBlob(b, d)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/shim.tar.gz.sigstore.json" {
			_, _ = w.Write(bundle)
			return
		}
		http.ServeContent(w, r, "shim.tar.gz", time.Time{}, bytes.NewReader(body))
	}))
	b.Cleanup(srv.Close)
	in := pin.Input{
		Fetch: v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{
			Location: srv.URL + "/shim.tar.gz", Signature: srv.URL + "/shim.tar.gz.sigstore.json",
		}},
		Verification: &v1alpha1.Verification{PublicKeys: []string{string(key.PublicKeyPEM())}},
	}
	r := &pin.ArtifactResolver{}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		res, err := r.Resolve(context.Background(), in)
		if err != nil || res.Digest != d.String() || res.VerifiedBy == "" {
			b.Fatalf("Resolve = %+v, %v", res, err)
		}
	}
}

// BenchmarkResolveVerifyOCI: the operator resolves a tag and verifies the
// signature attached to its digest; no layer is downloaded, whatever its
// size.
func BenchmarkResolveVerifyOCI(b *testing.B) {
	reg := testutil.StartRegistry(b, "", "")
	key := signtest.NewSigningKey(b)
	layer := bytes.Repeat([]byte("shimkit!"), 100<<20/8)
	reg.PushShim(b, "shims/big", "v1", testutil.PlatformArtifact{MediaType: fetch.MediaTypeOctetStream, Title: "containerd-shim-big-v2", Data: layer})
	key.SignOCI(b, reg.Host+"/shims/big:v1")
	in := pin.Input{
		Fetch:        v1alpha1.FetchStrategy{Type: v1alpha1.FetchOCI, OCI: &v1alpha1.OCIFetch{Reference: reg.Host + "/shims/big:v1", PlainHTTP: true}},
		Verification: &v1alpha1.Verification{PublicKeys: []string{string(key.PublicKeyPEM())}},
	}
	r := &pin.ArtifactResolver{}
	b.ReportAllocs()
	for b.Loop() {
		if res, err := r.Resolve(context.Background(), in); err != nil || res.VerifiedBy == "" {
			b.Fatalf("Resolve = %+v, %v", res, err)
		}
	}
}
