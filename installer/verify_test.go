package installer_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/shimkit/shimkit/fetch"
	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/internal/testutil/signtest"
)

// TestVerifyBeforeAnything: a plan handed to the installer directly, with
// verification, installs only an artifact signed as it asks. A missing
// or wrong signature, a keyless certificate of another identity and plain
// HTTP to a registry that is not local are refused with their reasons
// before anything is downloaded or written: the node's files are as they
// were and the artifact cache holds nothing.
func TestVerifyBeforeAnything(t *testing.T) {
	ctx := context.Background()
	reg := testutil.StartRegistry(t, "", "")
	srv := testutil.StartFileServer(t)
	trusted, other := signtest.NewSigningKey(t), signtest.NewSigningKey(t)
	keyless := signtest.NewKeylessSigner(t, "https://issuer.test", "builder@shimkit.test")
	rootFile := filepath.Join(t.TempDir(), "trusted_root.json")
	if err := os.WriteFile(rootFile, keyless.TrustedRootJSON(), 0o644); err != nil {
		t.Fatal(err)
	}

	// Each OCI artifact is its own (so is its digest), signed or not.
	oci := func(tag string, sign func(ref string)) *plan.Artifact {
		a := testutil.NewShimArchive(t, "demo", "/bin/true", map[string]string{"TAG": tag})
		top := reg.PushShim(t, "shims/demo", tag, testutil.PlatformArtifact{MediaType: fetch.MediaTypeShimLayer, Data: a.Data})
		ref := reg.Host + "/shims/demo:" + tag
		if sign != nil {
			sign(ref)
		}
		return &plan.Artifact{Type: plan.SourceOCI, Reference: ref, Digest: top.Digest.String(), PlainHTTP: true}
	}
	blob := testutil.NewShimArchive(t, "demo", "/bin/true", nil)
	d := digest.Digest("sha256:" + blob.SHA256)
	url := srv.Add("/demo.tar.gz", blob.Data)
	web := func(sig []byte) *plan.Artifact {
		a := &plan.Artifact{Type: plan.SourceHTTP, URL: url, Digest: d.String(), SignatureURL: srv.URL + "/missing.sig"}
		if sig != nil {
			a.SignatureURL = srv.Add("/demo-"+digest.FromBytes(sig).Encoded()[:8]+".sig", sig)
		}
		return a
	}
	keys := &plan.Verification{PublicKeys: []string{string(trusted.PublicKeyPEM())}}
	identity := func(subject string) *plan.Verification {
		return &plan.Verification{Keyless: &plan.Keyless{Issuer: "https://issuer.test", Subject: subject, TrustedRootPath: rootFile}}
	}
	remote := &plan.Artifact{Type: plan.SourceOCI, Reference: "registry.example.com:5000/shims/demo:v1", Digest: d.String(), PlainHTTP: true}

	tests := []struct {
		name   string
		art    *plan.Artifact
		verify *plan.Verification
		reason plan.Reason // "" installs
		says   string      // in the failure's message
	}{
		{"oci bundle", oci("bundle", func(r string) { trusted.SignOCI(t, r) }), keys, "", ""},
		{"oci cosign tag", oci("legacy", func(r string) { trusted.SignOCILegacy(t, r) }), keys, "", ""},
		{"oci keyless", oci("keyless", func(r string) { keyless.SignOCI(t, r) }), identity("builder@shimkit.test"), "", ""},
		{"oci keyless other subject", oci("keyless-other", func(r string) { keyless.SignOCI(t, r) }), identity("someone@else.test"), plan.ReasonSignatureInvalid, ""},
		{"oci unsigned", oci("unsigned", nil), keys, plan.ReasonSignatureMissing, ""},
		{"oci other key", oci("other", func(r string) { other.SignOCI(t, r) }), keys, plan.ReasonSignatureInvalid, ""},
		{"http bundle", web(trusted.SignBlob(t, d)), keys, "", ""},
		{"http detached", web(trusted.DetachedSignature(t, d)), keys, "", ""},
		{"http other key", web(other.DetachedSignature(t, d)), keys, plan.ReasonSignatureInvalid, ""},
		{"http no signature", web(nil), keys, plan.ReasonSignatureMissing, "signature not found"},
		{"plain http to a remote registry", remote, nil, plan.ReasonInsecureTransport, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newFakeNode(t, "version = 2\n")
			p := plan.New(plan.ShimRef{Name: "demo", UID: "uid-demo"}, plan.OpInstall)
			tt.art.Verification = tt.verify
			p.Artifact = tt.art
			p.Handlers = []plan.Handler{{Name: "demo", RuntimeType: "io.containerd.demo.v2", RuntimePath: "$(BUNDLE_DIR)/containerd-shim-demo-v2"}}
			p.Files = []plan.File{{Source: "containerd-shim-demo-v2", Path: "containerd-shim-demo-v2", Mode: 0o755}}
			rehash(p)
			before := snapshot(t, n.root, "/etc", "/opt", "/usr")
			res, err := n.installer().Install(ctx, p)
			r := installer.Report(p, res, err)
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("install: %v", err)
				}
				if tt.verify != nil && !strings.HasPrefix(r.VerifiedBy, "key sha256:") && !strings.HasPrefix(r.VerifiedBy, "keyless ") {
					t.Errorf("verifiedBy %q", r.VerifiedBy)
				}
				if r.Digest != tt.art.Digest {
					t.Errorf("installed %s, the plan pins %s", r.Digest, tt.art.Digest)
				}
				return
			}
			if r.Outcome != plan.Failed || r.Reason != tt.reason || !strings.Contains(r.Message, tt.says) {
				t.Fatalf("result %s/%s (%s), want Failed/%s saying %q", r.Outcome, r.Reason, r.Message, tt.reason, tt.says)
			}
			if after := snapshot(t, n.root, "/etc", "/opt", "/usr"); after != before {
				t.Errorf("the node changed:\n%s\nwas:\n%s", after, before)
			}
			if blobs := filesUnder(t, n.local("/var/lib/shimkit/cache")); len(blobs) > 0 {
				t.Errorf("downloaded before verifying: %v", blobs)
			}
		})
	}
}

// filesUnder lists the regular files under dir.
func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	return out
}
