package signature_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"testing"

	"github.com/opencontainers/go-digest"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/sign"

	"github.com/shimkit/shimkit/internal/testutil/signtest"
	"github.com/shimkit/shimkit/signature"
)

func TestVerifyBlob(t *testing.T) {
	artifact := []byte("containerd-shim-demo-v1, the binary")
	d := digest.FromBytes(artifact)
	otherDigest := digest.FromString("another shim")

	key := signtest.NewSigningKey(t)
	p384 := newKey(t, func() (crypto.Signer, error) { return ecdsa.GenerateKey(elliptic.P384(), rand.Reader) })
	rsaKey := newKey(t, func() (crypto.Signer, error) { return rsa.GenerateKey(rand.Reader, 2048) })
	_, edPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	edKey := signtest.NewSigningKeyFrom(t, edPriv)
	keyless := signtest.NewKeylessSigner(t, testIssuer, testSubject)

	keyPolicy := func(k *signtest.SigningKey) signature.Policy {
		return signature.Policy{PublicKeys: [][]byte{k.PublicKeyPEM()}}
	}
	keylessPolicy := signature.Policy{Keyless: &signature.Keyless{Issuer: testIssuer, Subject: testSubject, TrustedRoot: keyless.TrustedRootJSON()}}

	detached := key.DetachedSignature(t, d)
	raw, err := base64.StdEncoding.DecodeString(string(detached))
	if err != nil {
		t.Fatal(err)
	}
	tampered := bytes.Clone(raw)
	tampered[len(tampered)-1] ^= 1
	attPEM, attSig := attestation(t, d)

	tests := []struct {
		name    string
		policy  signature.Policy
		sig     []byte
		d       digest.Digest // d when empty
		want    string
		wantErr error
		wantMsg string
	}{
		{name: "bundle", policy: keyPolicy(key), sig: key.SignBlob(t, d), want: keyName(t, key.PublicKeyPEM())},
		{name: "bundle, other digest", policy: keyPolicy(key), sig: key.SignBlob(t, d), d: otherDigest,
			wantErr: signature.ErrInvalid, wantMsg: "artifact does not match digest"},
		{name: "bundle, wrong key", policy: keyPolicy(p384), sig: key.SignBlob(t, d), wantErr: signature.ErrInvalid, wantMsg: "failed to verify signature"},
		{name: "bundle, P-384", policy: keyPolicy(p384), sig: p384.SignBlob(t, d), want: keyName(t, p384.PublicKeyPEM())},
		{name: "bundle, RSA", policy: keyPolicy(rsaKey), sig: rsaKey.SignBlob(t, d), want: keyName(t, rsaKey.PublicKeyPEM())},
		{name: "bundle, Ed25519 statement", policy: keyPolicy(edKey), sig: edKey.SignBlob(t, d), want: keyName(t, edKey.PublicKeyPEM())},
		{name: "bundle, attestation", policy: signature.Policy{PublicKeys: [][]byte{attPEM}}, sig: attSig, wantErr: signature.ErrInvalid, wantMsg: "is an attestation, not a signature"},
		{name: "detached base64", policy: keyPolicy(key), sig: detached, want: keyName(t, key.PublicKeyPEM())},
		{name: "detached base64, newline", policy: keyPolicy(key), sig: append(bytes.Clone(detached), '\n'), want: keyName(t, key.PublicKeyPEM())},
		{name: "detached raw", policy: keyPolicy(key), sig: raw, want: keyName(t, key.PublicKeyPEM())},
		{name: "detached, second key", policy: signature.Policy{PublicKeys: [][]byte{rsaKey.PublicKeyPEM(), key.PublicKeyPEM()}},
			sig: detached, want: keyName(t, key.PublicKeyPEM())},
		{name: "detached RSA", policy: keyPolicy(rsaKey), sig: rsaKey.DetachedSignature(t, d), want: keyName(t, rsaKey.PublicKeyPEM())},
		{name: "detached P-384", policy: keyPolicy(p384), sig: p384.DetachedSignature(t, d), want: keyName(t, p384.PublicKeyPEM())},
		{name: "detached tampered", policy: keyPolicy(key), sig: tampered, wantErr: signature.ErrInvalid, wantMsg: "does not match the key"},
		{name: "detached, other digest", policy: keyPolicy(key), sig: detached, d: otherDigest, wantErr: signature.ErrInvalid, wantMsg: "does not match the key"},
		{name: "detached Ed25519", policy: keyPolicy(edKey), wantErr: signature.ErrInvalid, wantMsg: "Ed25519",
			sig: []byte(base64.StdEncoding.EncodeToString(ed25519.Sign(edPriv, artifact)))},
		{name: "detached, keyless policy", policy: keylessPolicy, sig: detached, wantErr: signature.ErrInvalid, wantMsg: "needs a sigstore bundle"},
		{name: "keyless", policy: keylessPolicy, sig: keyless.SignBlob(t, d), want: "keyless " + testIssuer + " " + testSubject},
		{name: "keyless, other digest", policy: keylessPolicy, sig: keyless.SignBlob(t, d), d: otherDigest,
			wantErr: signature.ErrInvalid, wantMsg: "does not match"},
		{name: "keyless, wrong identity", policy: signature.Policy{Keyless: &signature.Keyless{Issuer: testIssuer, SubjectRegExp: "^ci@",
			TrustedRoot: keyless.TrustedRootJSON()}}, sig: keyless.SignBlob(t, d), wantErr: signature.ErrInvalid, wantMsg: "SAN"},
		{name: "keyless bundle, keyed policy", policy: keyPolicy(key), sig: keyless.SignBlob(t, d), wantErr: signature.ErrInvalid, wantMsg: "trusts only public keys"},
		{name: "keys and keyless, keyless signs", policy: signature.Policy{PublicKeys: [][]byte{key.PublicKeyPEM()}, Keyless: keylessPolicy.Keyless},
			sig: keyless.SignBlob(t, d), want: "keyless " + testIssuer + " " + testSubject},
		{name: "empty", policy: keyPolicy(key), sig: []byte(" \n"), wantErr: signature.ErrMissing, wantMsg: "empty"},
		{name: "JSON, not a bundle", policy: keyPolicy(key), sig: []byte(`{"mediaType": "text/plain"}`), wantErr: signature.ErrInvalid, wantMsg: "not a sigstore bundle"},
		{name: "too large", policy: keyPolicy(key), sig: bytes.Repeat([]byte("A"), 1<<20+1), wantErr: signature.ErrInvalid, wantMsg: "more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dd := d
			if tt.d != "" {
				dd = tt.d
			}
			got, err := mustVerifier(t, tt.policy).VerifyBlob(context.Background(), dd, tt.sig)
			checkResult(t, got, err, tt.want, tt.wantErr, tt.wantMsg)
		})
	}
}

func TestVerifyBlobDigest(t *testing.T) {
	v := mustVerifier(t, signature.Policy{PublicKeys: [][]byte{signtest.NewSigningKey(t).PublicKeyPEM()}})
	for _, d := range []digest.Digest{"", "sha256:abc", digest.SHA512.FromString("x")} {
		_, err := v.VerifyBlob(context.Background(), d, []byte("c2ln"))
		if err == nil || errors.Is(err, signature.ErrInvalid) || errors.Is(err, signature.ErrMissing) {
			t.Errorf("digest %q: err = %v, want an argument error", d, err)
		}
	}
}

func newKey(t *testing.T, gen func() (crypto.Signer, error)) *signtest.SigningKey {
	t.Helper()
	priv, err := gen()
	if err != nil {
		t.Fatal(err)
	}
	return signtest.NewSigningKeyFrom(t, priv)
}

// attestation returns a public key and a bundle, signed by it, of an SLSA
// provenance statement naming d: an attestation, not a signature.
func attestation(t *testing.T, d digest.Digest) (pemKey, sig []byte) {
	t.Helper()
	kp, err := sign.NewEphemeralKeypair(nil)
	if err != nil {
		t.Fatal(err)
	}
	pemText, err := kp.GetPublicKeyPem()
	if err != nil {
		t.Fatal(err)
	}
	stmt, err := json.Marshal(map[string]any{
		"_type":         "https://in-toto.io/Statement/v1",
		"subject":       []any{map[string]any{"name": "shim", "digest": map[string]string{"sha256": d.Encoded()}}},
		"predicateType": "https://slsa.dev/provenance/v1",
		"predicate":     map[string]any{"buildDefinition": map[string]any{"buildType": "https://example.com/build"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	pb, err := sign.Bundle(&sign.DSSEData{Data: stmt, PayloadType: "application/vnd.in-toto+json"}, kp, sign.BundleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sig, err = (&bundle.Bundle{Bundle: pb}).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return []byte(pemText), sig
}

// FuzzVerifyBlob: whatever the signature bytes, VerifyBlob returns a
// signer or ErrMissing or ErrInvalid, and never panics.
func FuzzVerifyBlob(f *testing.F) {
	d := digest.FromString("containerd-shim-demo-v1")
	key := signtest.NewSigningKey(f)
	keyless := signtest.NewKeylessSigner(f, testIssuer, testSubject)
	v := mustVerifier(f, signature.Policy{PublicKeys: [][]byte{key.PublicKeyPEM()},
		Keyless: &signature.Keyless{Issuer: testIssuer, Subject: testSubject, TrustedRoot: keyless.TrustedRootJSON()}})
	f.Add(key.SignBlob(f, d))
	f.Add(keyless.SignBlob(f, d))
	f.Add(key.DetachedSignature(f, d))
	f.Add([]byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":{"publicKey":{"hint":"x"}},"dsseEnvelope":{"payload":"e30=","payloadType":"application/vnd.in-toto+json","signatures":[{"sig":"AA=="}]}}`))
	f.Add([]byte("{}"))
	f.Add([]byte("MEUCIQ=="))
	f.Add([]byte{0x30, 0x45, 0x02, 0x21, 0x00})
	f.Fuzz(func(t *testing.T, sig []byte) {
		signer, err := v.VerifyBlob(context.Background(), d, sig)
		if err != nil && !errors.Is(err, signature.ErrInvalid) && !errors.Is(err, signature.ErrMissing) {
			t.Fatalf("err = %v, want ErrInvalid or ErrMissing", err)
		}
		if err == nil && signer == nil {
			t.Fatal("no error and no signer")
		}
	})
}
