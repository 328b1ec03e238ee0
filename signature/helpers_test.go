package signature_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/signature"
)

// fixture is a registry holding three artifacts in repository "shim": a
// single manifest (tag v1), another one (v2) and a two-platform index
// (multi).
type fixture struct {
	host                 string
	repo                 *remote.Repository
	single, other, index ocispec.Descriptor
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	reg := testutil.StartRegistry(t, "", "")
	return fillFixture(t, reg.Host, reg.Repository(t, "shim"), reg.PushShim)
}

// newReferrersFixture is newFixture on a registry that serves the OCI
// referrers API (the shared test registry does not, so oras-go falls back
// to the referrers tag schema there).
func newReferrersFixture(t testing.TB) *fixture {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.WithReferrersSupport(true), registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	reg := &testutil.Registry{Server: srv, Host: strings.TrimPrefix(srv.URL, "http://")}
	return fillFixture(t, reg.Host, reg.Repository(t, "shim"), reg.PushShim)
}

type pushFunc func(t testing.TB, repo, tag string, a ...testutil.PlatformArtifact) ocispec.Descriptor

func fillFixture(t testing.TB, host string, repo *remote.Repository, push pushFunc) *fixture {
	t.Helper()
	art := func(os, arch, data string) testutil.PlatformArtifact {
		return testutil.PlatformArtifact{Platform: ocispec.Platform{OS: os, Architecture: arch},
			MediaType: "application/vnd.shimkit.shim.binary", Title: "containerd-shim-demo-v1", Data: []byte(data)}
	}
	return &fixture{
		host:   host,
		repo:   repo,
		single: push(t, "shim", "v1", art("", "", "shim one")),
		other:  push(t, "shim", "v2", art("", "", "shim two")),
		index:  push(t, "shim", "multi", art("linux", "amd64", "amd64 shim"), art("linux", "arm64", "arm64 shim")),
	}
}

func (f *fixture) ref(d ocispec.Descriptor) string { return f.host + "/shim@" + d.Digest.String() }

// copyReferrer attaches the signature referrer of from to to, unchanged
// but for its subject: a signature of another digest.
func (f *fixture) copyReferrer(t testing.TB, from, to ocispec.Descriptor) {
	t.Helper()
	ctx := context.Background()
	var refs []ocispec.Descriptor
	if err := f.repo.Referrers(ctx, from, "", func(r []ocispec.Descriptor) error {
		refs = append(refs, r...)
		return nil
	}); err != nil || len(refs) != 1 {
		t.Fatalf("referrers of %s: %v %v", from.Digest, refs, err)
	}
	rc, err := f.repo.Fetch(ctx, refs[0])
	if err != nil {
		t.Fatal(err)
	}
	data, err := content.ReadAll(rc, refs[0])
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	m.Subject = &to
	if data, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	desc := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, data)
	if err := f.repo.Push(ctx, desc, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
}

// copyLegacy points the cosign signature tag of to at the signature of from.
func (f *fixture) copyLegacy(t testing.TB, from, to ocispec.Descriptor) {
	t.Helper()
	ctx := context.Background()
	sig, err := f.repo.Resolve(ctx, "sha256-"+from.Digest.Encoded()+".sig")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.repo.Tag(ctx, sig, "sha256-"+to.Digest.Encoded()+".sig"); err != nil {
		t.Fatal(err)
	}
}

// keyName is the Signer description of a PEM public key, computed apart
// from the package.
func keyName(t testing.TB, pemKey []byte) string {
	t.Helper()
	block, _ := pem.Decode(pemKey)
	if block == nil {
		t.Fatal("no PEM")
	}
	sum := sha256.Sum256(block.Bytes)
	return "key sha256:" + hex.EncodeToString(sum[:])[:16]
}

func mustVerifier(t testing.TB, p signature.Policy) *signature.Verifier {
	t.Helper()
	v, err := signature.NewVerifier(p)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// checkResult compares a verification's outcome with what a case wants: a
// signer description, or an error matching wantErr and containing wantMsg.
func checkResult(t *testing.T, got *signature.Signer, err error, want string, wantErr error, wantMsg string) {
	t.Helper()
	if wantErr == nil {
		if err != nil {
			t.Fatalf("err = %v, want signer %q", err, want)
		}
		if got.String() != want {
			t.Fatalf("signer = %q, want %q", got, want)
		}
		return
	}
	if err == nil {
		t.Fatalf("verified by %q, want %v", got, wantErr)
	}
	if !errors.Is(err, wantErr) {
		t.Fatalf("err = %v, want %v", err, wantErr)
	}
	if !strings.Contains(err.Error(), wantMsg) {
		t.Fatalf("err = %v, want it to say %q", err, wantMsg)
	}
}
