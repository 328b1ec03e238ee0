package signature_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"
	"testing"

	"github.com/sigstore/sigstore-go/pkg/root"

	"github.com/shimkit/shimkit/internal/testutil/signtest"
	"github.com/shimkit/shimkit/signature"
)

func TestNewVerifierPolicy(t *testing.T) {
	good := signtest.NewSigningKey(t).PublicKeyPEM()
	trustedRoot := signtest.NewKeylessSigner(t, testIssuer, testSubject).TrustedRootJSON()
	emptyRoot, err := root.NewTrustedRoot(root.TrustedRootMediaType01, nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	emptyRootJSON, err := emptyRoot.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	keyless := func(edit func(k *signature.Keyless)) *signature.Keyless {
		k := &signature.Keyless{Issuer: testIssuer, Subject: testSubject, TrustedRoot: trustedRoot}
		edit(k)
		return k
	}

	tests := []struct {
		name    string
		policy  signature.Policy
		wantMsg string // empty: the policy is valid
	}{
		{name: "one key", policy: signature.Policy{PublicKeys: [][]byte{good}}},
		{name: "keyless", policy: signature.Policy{Keyless: keyless(func(*signature.Keyless) {})}},
		{name: "keys and keyless", policy: signature.Policy{PublicKeys: [][]byte{good}, Keyless: keyless(func(*signature.Keyless) {})}},
		{name: "RSA key", policy: signature.Policy{PublicKeys: [][]byte{rsaPEM(t, 2048)}}},
		{name: "nothing", policy: signature.Policy{}, wantMsg: "neither publicKeys nor keyless"},
		{name: "bad PEM", policy: signature.Policy{PublicKeys: [][]byte{good, []byte("not a key")}}, wantMsg: "publicKeys[1]: no PEM block"},
		{name: "two PEM blocks", policy: signature.Policy{PublicKeys: [][]byte{append(append([]byte{}, good...), good...)}},
			wantMsg: "publicKeys[0]: more than one PEM block"},
		{name: "certificate, not a key", policy: signature.Policy{PublicKeys: [][]byte{pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1}})}},
			wantMsg: "publicKeys[0]"},
		{name: "small RSA key", policy: signature.Policy{PublicKeys: [][]byte{rsaPEM(t, 1024)}}, wantMsg: "publicKeys[0]: RSA key of 1024 bits"},
		{name: "P-224 key", policy: signature.Policy{PublicKeys: [][]byte{p224PEM(t)}}, wantMsg: "publicKeys[0]: ECDSA curve P-224"},
		{name: "no issuer", policy: signature.Policy{Keyless: keyless(func(k *signature.Keyless) { k.Issuer = "" })}, wantMsg: "keyless.issuer"},
		{name: "no subject", policy: signature.Policy{Keyless: keyless(func(k *signature.Keyless) { k.Subject = "" })}, wantMsg: "keyless.subject"},
		{name: "subject and regexp", policy: signature.Policy{Keyless: keyless(func(k *signature.Keyless) { k.SubjectRegExp = ".*" })},
			wantMsg: "keyless.subjectRegExp: set only one"},
		{name: "bad regexp", policy: signature.Policy{Keyless: keyless(func(k *signature.Keyless) { k.Subject, k.SubjectRegExp = "", "(" })},
			wantMsg: "keyless.subjectRegExp: error parsing regexp"},
		{name: "no trusted root", policy: signature.Policy{Keyless: keyless(func(k *signature.Keyless) { k.TrustedRoot = nil })},
			wantMsg: "keyless.trustedRoot: empty"},
		{name: "bad trusted root", policy: signature.Policy{Keyless: keyless(func(k *signature.Keyless) { k.TrustedRoot = []byte(`{"mediaType": 1}`) })},
			wantMsg: "keyless.trustedRoot"},
		{name: "trusted root without CA", policy: signature.Policy{Keyless: keyless(func(k *signature.Keyless) { k.TrustedRoot = emptyRootJSON })},
			wantMsg: "keyless.trustedRoot: no certificate authority"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := signature.NewVerifier(tt.policy)
			if tt.wantMsg == "" {
				if err != nil || v == nil {
					t.Fatalf("NewVerifier: %v", err)
				}
				return
			}
			if !errors.Is(err, signature.ErrPolicy) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("err = %v, want ErrPolicy saying %q", err, tt.wantMsg)
			}
		})
	}
}

func rsaPEM(t *testing.T, bits int) []byte {
	t.Helper()
	priv, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		t.Fatal(err)
	}
	return pkixPEM(t, &priv.PublicKey)
}

func p224PEM(t *testing.T) []byte {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return pkixPEM(t, &priv.PublicKey)
}

func pkixPEM(t *testing.T, pub any) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}
