package pin_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/shimkit/shimkit/internal/operator/pin"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/internal/testutil/signtest"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/signature"
)

// TestResolverReadsSignatureFirst: with verification, the ArtifactResolver
// reads an HTTP artifact's signature before the artifact, over a real HTTP
// server: a signature URL that answers 404 (for any platform) costs no
// download of any artifact and fails with signature.ErrNotFound (so
// ErrMissing: reason SignatureMissing), saying "signature not found"; an
// artifact is downloaded once, to check the signature there is. Before,
// the artifact was downloaded first (1 download per resolution whatever
// the signature) and the 404 read "artifact not found".
func TestResolverReadsSignatureFirst(t *testing.T) {
	srv := testutil.StartFileServer(t)
	trusted, other := signtest.NewSigningKey(t), signtest.NewSigningKey(t)
	amd := testutil.NewShimArchive(t, "sig", "/bin/true", map[string]string{"ARCH": "amd64"})
	arm := testutil.NewShimArchive(t, "sig", "/bin/true", map[string]string{"ARCH": "arm64"})
	amdURL, armURL := srv.Add("/amd64.tar.gz", amd.Data), srv.Add("/arm64.tar.gz", arm.Data)
	amdSig := srv.Add("/amd64.tar.gz.sigstore.json", trusted.SignBlob(t, digest.Digest("sha256:"+amd.SHA256)))
	armSig := srv.Add("/arm64.tar.gz.sigstore.json", trusted.SignBlob(t, digest.Digest("sha256:"+arm.SHA256)))
	otherSig := srv.Add("/amd64.tar.gz.sig", other.DetachedSignature(t, digest.Digest("sha256:"+amd.SHA256)))
	missing := srv.URL + "/missing.sig"
	keys := &v1alpha1.Verification{PublicKeys: []string{string(trusted.PublicKeyPEM())}}
	single := func(sig string) *v1alpha1.AnonHTTPFetch {
		return &v1alpha1.AnonHTTPFetch{Location: amdURL, Signature: sig}
	}
	platforms := func(amdSig, armSig string) *v1alpha1.AnonHTTPFetch {
		return &v1alpha1.AnonHTTPFetch{Platforms: []v1alpha1.PlatformArtifact{
			{Platform: "linux/amd64", Location: amdURL, Signature: amdSig},
			{Platform: "linux/arm64", Location: armURL, Signature: armSig},
		}}
	}
	tests := []struct {
		name      string
		http      *v1alpha1.AnonHTTPFetch
		err       error // nil: resolves
		downloads map[string]int64
		want      []string // in the error
	}{
		{"signed", single(amdSig), nil, map[string]int64{"/amd64.tar.gz": 1}, nil},
		{"signature 404", single(missing), signature.ErrNotFound, map[string]int64{"/amd64.tar.gz": 0},
			[]string{"spec.fetchStrategy.anonHttp.signature: signature not found", missing, "404 Not Found"}},
		{"other key", single(otherSig), signature.ErrInvalid, map[string]int64{"/amd64.tar.gz": 1}, nil},
		{"platforms signed", platforms(amdSig, armSig), nil, map[string]int64{"/amd64.tar.gz": 1, "/arm64.tar.gz": 1}, nil},
		{"second platform's signature 404", platforms(amdSig, missing), signature.ErrNotFound, map[string]int64{"/amd64.tar.gz": 0, "/arm64.tar.gz": 0},
			[]string{"spec.fetchStrategy.anonHttp.platforms[1].signature: signature not found"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := map[string]int64{}
			for p := range tt.downloads {
				before[p] = srv.RequestsFor(p)
			}
			res, err := (&pin.ArtifactResolver{}).Resolve(context.Background(), pin.Input{
				Fetch: v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: tt.http}, Verification: keys,
			})
			for p, want := range tt.downloads {
				if got := srv.RequestsFor(p) - before[p]; got != want {
					t.Errorf("%s downloaded %d times, want %d", p, got, want)
				}
			}
			if tt.err == nil {
				if err != nil || !strings.HasPrefix(res.VerifiedBy, "key sha256:") {
					t.Fatalf("Resolve = %+v, %v", res, err)
				}
				return
			}
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if errors.Is(tt.err, signature.ErrNotFound) && !errors.Is(err, signature.ErrMissing) {
				t.Errorf("signature.ErrNotFound is not ErrMissing: %v", err)
			}
			for _, part := range tt.want {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error lacks %q: %v", part, err)
				}
			}
			if strings.Contains(err.Error(), "artifact not found") {
				t.Errorf("a missing signature reads as a missing artifact: %v", err)
			}
		})
	}
}
