package signtest

import (
	"context"
	"encoding/json"
	"github.com/shimkit/shimkit/internal/testutil"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
)

// TestSignOCIFormats checks that the helpers write what cosign writes: a
// bundle referrer of the signed digest (through the referrers tag schema,
// which the in-process registry needs), and the sha256-<hex>.sig tag.
func TestSignOCIFormats(t *testing.T) {
	ctx := context.Background()
	reg := testutil.StartRegistry(t, "", "")
	desc := reg.PushShim(t, "shim", "v1", testutil.PlatformArtifact{MediaType: "application/octet-stream", Data: []byte("shim")})
	repo := reg.Repository(t, "shim")
	key := NewSigningKey(t)
	if got := key.SignOCI(t, reg.Host+"/shim:v1"); got != desc.Digest {
		t.Fatalf("SignOCI signed %s, want %s", got, desc.Digest)
	}
	if got := NewKeylessSigner(t, "https://issuer.example", "a@example.com").SignOCI(t, reg.Host+"/shim@"+desc.Digest.String()); got != desc.Digest {
		t.Fatalf("keyless SignOCI signed %s, want %s", got, desc.Digest)
	}
	var refs []ocispec.Descriptor
	if err := repo.Referrers(ctx, desc, sigstoreBundleMediaType, func(r []ocispec.Descriptor) error {
		refs = append(refs, r...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(refs) != 2 {
		t.Fatalf("referrers = %v, want the two bundles", refs)
	}
	for _, r := range refs {
		if r.Annotations["dev.sigstore.bundle.predicateType"] != cosignSignPredicate {
			t.Errorf("referrer %s annotations = %v", r.Digest, r.Annotations)
		}
		m := fetchManifest(t, repo, r)
		if m.Subject == nil || m.Subject.Digest != desc.Digest || len(m.Layers) != 1 || m.Layers[0].MediaType != sigstoreBundleMediaType {
			t.Errorf("referrer manifest = %+v", m)
		}
	}

	key.SignOCILegacy(t, reg.Host+"/shim:v1")
	sig, err := repo.Resolve(ctx, "sha256-"+desc.Digest.Encoded()+".sig")
	if err != nil {
		t.Fatal(err)
	}
	m := fetchManifest(t, repo, sig)
	if len(m.Layers) != 1 || m.Layers[0].MediaType != simpleSigningMediaType || m.Layers[0].Annotations["dev.cosignproject.cosign/signature"] == "" {
		t.Errorf("legacy signature manifest = %+v", m)
	}
}

func fetchManifest(t *testing.T, f content.Fetcher, desc ocispec.Descriptor) ocispec.Manifest {
	t.Helper()
	data, err := content.FetchAll(context.Background(), f, desc)
	if err != nil {
		t.Fatal(err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
