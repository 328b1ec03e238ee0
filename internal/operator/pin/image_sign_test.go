package pin_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/shimkit/shimkit/internal/operator/pin"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/internal/testutil/signtest"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/signature"
)

// TestResolverVerifiesImages: spec.verification applies to a Shim of
// fetchStrategy.type image as to an OCI artifact (FetchStrategy.Registry):
// the ArtifactResolver pins the image's tag to its manifest digest only
// when a signature of the trusted key verifies it (a sigstore bundle or a
// cosign legacy signature); an unsigned image fails with
// signature.ErrMissing (SignatureMissing) and one signed by another key
// with signature.ErrInvalid (SignatureInvalid), the error naming the
// image at its digest.
func TestResolverVerifiesImages(t *testing.T) {
	reg := testutil.StartRegistry(t, "", "")
	trusted, other := signtest.NewSigningKey(t), signtest.NewSigningKey(t)
	// push pushes an image of its own (and digest) as shims/img:tag.
	push := func(tag string) (ref, digest string) {
		d := reg.PushImage(t, "shims/img", tag, map[string][]byte{
			"containerd-shim-img-v2": []byte("#!/bin/sh\n"), "TAG": []byte(tag + "\n"),
		})
		return reg.Host + "/shims/img:" + tag, d
	}
	signed, signedD := push("signed")
	legacy, legacyD := push("legacy")
	unsigned, unsignedD := push("unsigned")
	wrong, wrongD := push("wrong")
	trusted.SignOCI(t, signed)
	trusted.SignOCILegacy(t, legacy)
	other.SignOCI(t, wrong)
	keys := &v1alpha1.Verification{PublicKeys: []string{string(trusted.PublicKeyPEM())}}
	for _, tt := range []struct {
		name   string
		ref    string
		digest string
		err    error // nil: resolves, verified
	}{
		{"bundle", signed, signedD, nil},
		{"legacy", legacy, legacyD, nil},
		{"by digest", reg.Host + "/shims/img@" + signedD, signedD, nil},
		{"unsigned", unsigned, unsignedD, signature.ErrMissing},
		{"unsigned by digest", reg.Host + "/shims/img@" + unsignedD, unsignedD, signature.ErrMissing},
		{"other key", wrong, wrongD, signature.ErrInvalid},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := (&pin.ArtifactResolver{}).Resolve(context.Background(), pin.Input{
				Fetch:        v1alpha1.FetchStrategy{Type: v1alpha1.FetchImage, Image: &v1alpha1.OCIFetch{Reference: tt.ref, PlainHTTP: true}},
				Verification: keys,
			})
			if tt.err == nil {
				if err != nil || res.Digest != tt.digest || !strings.HasPrefix(res.VerifiedBy, "key sha256:") {
					t.Fatalf("Resolve = %+v, %v; want %s verified by the key", res, err, tt.digest)
				}
				return
			}
			if !errors.Is(err, tt.err) {
				t.Fatalf("Resolve = %+v, %v; want %v", res, err, tt.err)
			}
			if errors.Is(tt.err, signature.ErrMissing) == errors.Is(err, signature.ErrInvalid) {
				t.Errorf("the error is both or neither of ErrMissing and ErrInvalid: %v", err)
			}
			if !strings.Contains(err.Error(), "shims/img@"+tt.digest) {
				t.Errorf("the error does not name the image at its digest %s: %v", tt.digest, err)
			}
		})
	}
	// Without spec.verification an unsigned image resolves, unverified.
	res, err := (&pin.ArtifactResolver{}).Resolve(context.Background(), pin.Input{
		Fetch: v1alpha1.FetchStrategy{Type: v1alpha1.FetchImage, Image: &v1alpha1.OCIFetch{Reference: unsigned, PlainHTTP: true}},
	})
	if err != nil || res.Digest != unsignedD || res.VerifiedBy != "" {
		t.Errorf("unverified Resolve = %+v, %v", res, err)
	}
}
