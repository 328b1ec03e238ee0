package operator_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shimkit/shimkit/fetch"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/internal/testutil/signtest"
	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestVerifiedArtifacts: with spec.verification, only an artifact signed
// by the given key is installed, and the signer shows in the status. An
// unsigned artifact (SignatureMissing), one signed by another key
// (SignatureInvalid), plain HTTP to a registry that is not local and an
// https download redirected to http (InsecureTransport) are refused
// before any node is touched: no Job, nothing on the nodes.
func TestVerifiedArtifacts(t *testing.T) {
	env := startCluster(t)
	reg := testutil.StartRegistry(t, "", "")
	srv := testutil.StartFileServer(t)
	trusted, other := signtest.NewSigningKey(t), signtest.NewSigningKey(t)
	archive := testutil.NewShimArchive(t, "pin", "/bin/true", nil)
	push := func(tag string) string { // each tag its own artifact (and digest)
		a := testutil.NewShimArchive(t, "pin", "/bin/true", map[string]string{"TAG": tag})
		reg.PushShim(t, "shims/signed", tag, testutil.PlatformArtifact{MediaType: fetch.MediaTypeShimLayer, Data: a.Data})
		return reg.Host + "/shims/signed:" + tag
	}
	signed, legacy, unsigned, wrong := push("signed"), push("legacy"), push("unsigned"), push("wrong")
	trusted.SignOCI(t, signed)
	trusted.SignOCILegacy(t, legacy)
	other.SignOCI(t, wrong)

	blobURL := srv.Add("/pin.tar.gz", archive.Data)
	d := "sha256:" + archive.SHA256
	bundleURL := srv.Add("/pin.tar.gz.sigstore.json", trusted.SignBlob(t, digestOfString(d)))
	badSigURL := srv.Add("/pin.tar.gz.sig", other.DetachedSignature(t, digestOfString(d)))

	// An https server that redirects to the plain http one.
	downgrade := httptest.NewTLSServer(http.RedirectHandler(blobURL, http.StatusFound))
	t.Cleanup(downgrade.Close)

	f := startFleet(t, env, 1)
	startOperatorWith(t, env, env.Config, func(o *operator.Options) {
		o.Resolver = &operator.ArtifactResolver{Client: downgrade.Client()}
	})
	keys := &v1alpha1.Verification{PublicKeys: []string{string(trusted.PublicKeyPEM())}}
	oci := func(ref string) v1alpha1.FetchStrategy {
		return v1alpha1.FetchStrategy{Type: v1alpha1.FetchOCI, OCI: &v1alpha1.OCIFetch{Reference: ref, PlainHTTP: true}}
	}
	web := func(url, sig string) v1alpha1.FetchStrategy {
		return v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{Location: url, Signature: sig}}
	}
	tests := []struct {
		name   string
		fetch  v1alpha1.FetchStrategy
		verify *v1alpha1.Verification
		reason string // "" installs
	}{
		{"oci-bundle", oci(signed), keys, ""},
		{"oci-legacy", oci(legacy), keys, ""},
		{"oci-unsigned", oci(unsigned), keys, v1alpha1.ReasonSignatureMissing},
		{"oci-other-key", oci(wrong), keys, v1alpha1.ReasonSignatureInvalid},
		{"http-bundle", web(blobURL, bundleURL), keys, ""},
		{"http-other-key", web(blobURL, badSigURL), keys, v1alpha1.ReasonSignatureInvalid},
		{"http-no-signature", web(blobURL, srv.URL+"/missing.sig"), keys, v1alpha1.ReasonSignatureMissing},
		{"plain-http-remote", oci("registry.example.com:5000/shims/signed:signed"), nil, v1alpha1.ReasonInsecureTransport},
		{"https-to-http", web(downgrade.URL+"/pin.tar.gz", ""), nil, v1alpha1.ReasonInsecureTransport},
	}
	for _, tt := range tests {
		s := pinShim(tt.name, tt.fetch)
		s.Spec.Verification = tt.verify
		if err := env.Client.Create(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.reason == "" {
				s := readyAt(t, env.Client, tt.name, "")
				if by := s.Status.Artifact.VerifiedBy; !strings.HasPrefix(by, "key sha256:") {
					t.Errorf("status.artifact.verifiedBy = %q", by)
				}
				return
			}
			waitFor(t, 30*time.Second, tt.reason, func() (bool, string) {
				c := condition(getShim(t, env.Client, tt.name), v1alpha1.ConditionDegraded)
				if c == nil {
					return false, "no Degraded"
				}
				return c.Reason == tt.reason, c.Reason + ": " + c.Message
			})
			if n := len(jobsOf(t, env.Client, tt.name)); n != 0 {
				t.Errorf("%d Jobs for a refused artifact", n)
			}
			if _, err := os.Stat(filepath.Join(f.root(nodeName(0)), "opt/shimkit", tt.name)); !os.IsNotExist(err) {
				t.Errorf("the node has a bundle directory of %s: %v", tt.name, err)
			}
		})
	}
}
