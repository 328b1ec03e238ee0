package signature_test

import (
	"context"
	"errors"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/shimkit/shimkit/internal/testutil/signtest"
	"github.com/shimkit/shimkit/signature"
)

const (
	testIssuer  = "https://issuer.example"
	testSubject = "release@shimkit.example"
)

func TestVerifyOCI(t *testing.T) {
	key, other := signtest.NewSigningKey(t), signtest.NewSigningKey(t)
	keyless := signtest.NewKeylessSigner(t, testIssuer, testSubject)
	keyPolicy := signature.Policy{PublicKeys: [][]byte{key.PublicKeyPEM()}}
	keylessPolicy := func(subject, regexp, issuer string) signature.Policy {
		return signature.Policy{Keyless: &signature.Keyless{Issuer: issuer, Subject: subject, SubjectRegExp: regexp,
			TrustedRoot: keyless.TrustedRootJSON()}}
	}
	wantKeyless := "keyless " + testIssuer + " " + testSubject
	single := func(f *fixture) ocispec.Descriptor { return f.single }

	tests := []struct {
		name      string
		referrers bool // a registry with the referrers API
		sign      func(t *testing.T, f *fixture)
		subject   func(f *fixture) ocispec.Descriptor
		policy    signature.Policy
		want      string
		wantErr   error
		wantMsg   string
	}{{
		name:   "bundle referrer, referrers tag schema",
		sign:   func(t *testing.T, f *fixture) { key.SignOCI(t, f.ref(f.single)) },
		policy: keyPolicy, want: keyName(t, key.PublicKeyPEM()),
	}, {
		name: "bundle referrer, referrers API", referrers: true,
		sign:   func(t *testing.T, f *fixture) { key.SignOCI(t, f.ref(f.single)) },
		policy: keyPolicy, want: keyName(t, key.PublicKeyPEM()),
	}, {
		name:   "legacy tag",
		sign:   func(t *testing.T, f *fixture) { key.SignOCILegacy(t, f.ref(f.single)) },
		policy: keyPolicy, want: keyName(t, key.PublicKeyPEM()),
	}, {
		name:    "index signed at the index digest",
		sign:    func(t *testing.T, f *fixture) { key.SignOCI(t, f.host+"/shim:multi") },
		subject: func(f *fixture) ocispec.Descriptor { return f.index },
		policy:  keyPolicy, want: keyName(t, key.PublicKeyPEM()),
	}, {
		name:   "second key of the policy",
		sign:   func(t *testing.T, f *fixture) { other.SignOCI(t, f.ref(f.single)) },
		policy: signature.Policy{PublicKeys: [][]byte{key.PublicKeyPEM(), other.PublicKeyPEM()}},
		want:   keyName(t, other.PublicKeyPEM()),
	}, {
		name: "wrong bundle, good legacy tag",
		sign: func(t *testing.T, f *fixture) {
			other.SignOCI(t, f.ref(f.single))
			key.SignOCILegacy(t, f.ref(f.single))
		},
		policy: keyPolicy, want: keyName(t, key.PublicKeyPEM()),
	}, {
		name: "wrong key, both schemes",
		sign: func(t *testing.T, f *fixture) {
			other.SignOCI(t, f.ref(f.single))
			other.SignOCILegacy(t, f.ref(f.single))
		},
		policy: keyPolicy, wantErr: signature.ErrInvalid, wantMsg: "layer 0: signed by none of the policy's 1 public keys",
	}, {
		name:   "no signature",
		sign:   func(t *testing.T, f *fixture) { key.SignOCI(t, f.ref(f.other)) },
		policy: keyPolicy, wantErr: signature.ErrMissing, wantMsg: "no sigstore bundle referrer",
	}, {
		name: "bundle of another digest",
		sign: func(t *testing.T, f *fixture) {
			key.SignOCI(t, f.ref(f.other))
			f.copyReferrer(t, f.other, f.single)
		},
		policy: keyPolicy, wantErr: signature.ErrInvalid, wantMsg: "does not match",
	}, {
		name: "legacy tag of another digest",
		sign: func(t *testing.T, f *fixture) {
			key.SignOCILegacy(t, f.ref(f.other))
			f.copyLegacy(t, f.other, f.single)
		},
		policy: keyPolicy, wantErr: signature.ErrInvalid, wantMsg: "payload signs " + "sha256:",
	}, {
		name:   "keyless, right identity",
		sign:   func(t *testing.T, f *fixture) { keyless.SignOCI(t, f.ref(f.single)) },
		policy: keylessPolicy(testSubject, "", testIssuer), want: wantKeyless,
	}, {
		name:   "keyless, subject regexp",
		sign:   func(t *testing.T, f *fixture) { keyless.SignOCI(t, f.ref(f.single)) },
		policy: keylessPolicy("", `^[a-z]+@shimkit\.example$`, testIssuer), want: wantKeyless,
	}, {
		name:   "keyless, wrong subject",
		sign:   func(t *testing.T, f *fixture) { keyless.SignOCI(t, f.ref(f.single)) },
		policy: keylessPolicy("mallory@shimkit.example", "", testIssuer), wantErr: signature.ErrInvalid, wantMsg: "identity",
	}, {
		name:   "keyless, wrong issuer",
		sign:   func(t *testing.T, f *fixture) { keyless.SignOCI(t, f.ref(f.single)) },
		policy: keylessPolicy(testSubject, "", "https://other.example"), wantErr: signature.ErrInvalid, wantMsg: "identity",
	}, {
		name: "keyless, other trusted root",
		sign: func(t *testing.T, f *fixture) {
			signtest.NewKeylessSigner(t, testIssuer, testSubject).SignOCI(t, f.ref(f.single))
		},
		policy: keylessPolicy(testSubject, "", testIssuer), wantErr: signature.ErrInvalid, wantMsg: "keyless:",
	}, {
		name:   "keyless bundle, keyed policy",
		sign:   func(t *testing.T, f *fixture) { keyless.SignOCI(t, f.ref(f.single)) },
		policy: keyPolicy, wantErr: signature.ErrInvalid, wantMsg: "the policy trusts only public keys",
	}, {
		name:   "keyed bundle, keyless policy",
		sign:   func(t *testing.T, f *fixture) { key.SignOCI(t, f.ref(f.single)) },
		policy: keylessPolicy(testSubject, "", testIssuer), wantErr: signature.ErrInvalid, wantMsg: "trusts only a keyless identity",
	}, {
		name:   "legacy tag, keyless policy",
		sign:   func(t *testing.T, f *fixture) { key.SignOCILegacy(t, f.ref(f.single)) },
		policy: keylessPolicy(testSubject, "", testIssuer), wantErr: signature.ErrInvalid, wantMsg: "public keys only",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			if tt.referrers {
				f = newReferrersFixture(t)
			}
			tt.sign(t, f)
			subject := single
			if tt.subject != nil {
				subject = tt.subject
			}
			got, err := mustVerifier(t, tt.policy).VerifyOCI(context.Background(), f.repo, subject(f))
			checkResult(t, got, err, tt.want, tt.wantErr, tt.wantMsg)
		})
	}
}

// TestVerifyOCIUnreadable: a registry that cannot be read is neither a
// missing nor an invalid signature, so that the caller can retry.
func TestVerifyOCIUnreadable(t *testing.T) {
	key := signtest.NewSigningKey(t)
	f := newFixture(t)
	key.SignOCI(t, f.ref(f.single))
	v := mustVerifier(t, signature.Policy{PublicKeys: [][]byte{key.PublicKeyPEM()}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := v.VerifyOCI(ctx, f.repo, f.single)
	if err == nil || errors.Is(err, signature.ErrMissing) || errors.Is(err, signature.ErrInvalid) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled alone", err)
	}
}

// BenchmarkVerifyOCI verifies a cosign 3 bundle referrer on the in-process
// registry (referrers tag schema): listing, two manifests and a blob read
// over loopback HTTP, and the signature check.
func BenchmarkVerifyOCI(b *testing.B) {
	key := signtest.NewSigningKey(b)
	f := newFixture(b)
	key.SignOCI(b, f.ref(f.single))
	v := mustVerifier(b, signature.Policy{PublicKeys: [][]byte{key.PublicKeyPEM()}})
	ctx := context.Background()
	for b.Loop() {
		if _, err := v.VerifyOCI(ctx, f.repo, f.single); err != nil {
			b.Fatal(err)
		}
	}
}
