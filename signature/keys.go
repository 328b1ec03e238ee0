package signature

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	sigsig "github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/options"
)

// errEd25519Digest explains why an Ed25519 detached signature cannot be
// checked here.
var errEd25519Digest = errors.New("an Ed25519 signature covers the artifact itself and cannot be checked against its digest alone; " +
	"sign a sigstore bundle whose DSSE statement names the digest instead")

// trustedKey is one public key of a Policy, ready for the three formats.
type trustedKey struct {
	name     string          // "key sha256:<16 hex>"
	ed25519  bool            // pure Ed25519 verifies messages, never digests
	verifier sigsig.Verifier // legacy payloads and detached signatures
	bundles  *verify.Verifier
}

// newTrustedKey parses one PEM public key; its errors are short, the caller
// names the field.
func newTrustedKey(pemKey []byte) (*trustedKey, error) {
	block, rest := pem.Decode(pemKey)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	if next, _ := pem.Decode(rest); next != nil {
		return nil, errors.New("more than one PEM block: give each key its own entry")
	}
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pem.EncodeToMemory(block))
	if err != nil {
		return nil, err
	}
	if err := checkKeyType(pub); err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(der)
	k := &trustedKey{name: "key sha256:" + hex.EncodeToString(sum[:])[:16]}
	if k.verifier, err = keyVerifier(pub); err != nil {
		return nil, err
	}
	_, k.ed25519 = pub.(ed25519.PublicKey)
	// Trust this key whatever key hint a bundle carries: hints are not
	// authenticated, and a policy with several keys tries each.
	material := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) {
		return root.NewExpiringKey(k.verifier, time.Time{}, time.Time{}), nil
	})
	// Keys are trusted as such: no transparency log or timestamp is needed,
	// so keyed verification works offline.
	k.bundles, err = verify.NewVerifier(material, verify.WithNoObserverTimestamps(), verify.WithoutStatementPredicate())
	if err != nil {
		return nil, err
	}
	return k, nil
}

func checkKeyType(pub crypto.PublicKey) error {
	switch pk := pub.(type) {
	case *ecdsa.PublicKey:
		switch pk.Curve {
		case elliptic.P256(), elliptic.P384(), elliptic.P521():
			return nil
		}
		return fmt.Errorf("ECDSA curve %s is not supported (P-256, P-384, P-521)", pk.Curve.Params().Name)
	case *rsa.PublicKey:
		if bits := pk.N.BitLen(); bits < 2048 || bits > 4096 {
			return fmt.Errorf("RSA key of %d bits is not supported (2048 to 4096)", bits)
		}
		return nil
	case ed25519.PublicKey:
		return nil
	}
	return fmt.Errorf("unsupported key type %T", pub)
}

// keyVerifier returns a verifier for pub. ECDSA signatures are accepted
// with the curve's default hash (sigstore's choice) and with SHA-256
// (cosign's long-standing choice for every key); RSA is PKCS #1 v1.5 with
// SHA-256, as cosign signs. Ed25519 gets sigstore's own verifier, which
// sigstore-go recognises to refuse digest-only checks clearly.
func keyVerifier(pub crypto.PublicKey) (sigsig.Verifier, error) {
	def, err := sigsig.LoadDefaultVerifier(pub)
	if err != nil {
		return nil, err
	}
	if _, ok := pub.(*ecdsa.PublicKey); !ok {
		return def, nil
	}
	sha, err := sigsig.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return nil, err
	}
	return &anyHashVerifier{pub: pub, verifiers: []sigsig.Verifier{def, sha}}, nil
}

// anyHashVerifier accepts a signature that one of its verifiers (the same
// key with different hash functions) accepts.
type anyHashVerifier struct {
	pub       crypto.PublicKey
	verifiers []sigsig.Verifier
}

var _ sigsig.Verifier = (*anyHashVerifier)(nil)

func (m *anyHashVerifier) PublicKey(...sigsig.PublicKeyOption) (crypto.PublicKey, error) {
	return m.pub, nil
}

func (m *anyHashVerifier) VerifySignature(sig, message io.Reader, opts ...sigsig.VerifyOption) error {
	sigBytes, err := io.ReadAll(io.LimitReader(sig, maxDocument))
	if err != nil {
		return err
	}
	var msg []byte
	if message != nil {
		if msg, err = io.ReadAll(message); err != nil {
			return err
		}
	}
	var errs []error
	for _, v := range m.verifiers {
		var mr io.Reader
		if message != nil {
			mr = bytes.NewReader(msg)
		}
		err := v.VerifySignature(bytes.NewReader(sigBytes), mr, opts...)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	return joined(errs)
}

// verifyDigest checks a detached signature over the artifact whose sha256
// is sum.
func (k *trustedKey) verifyDigest(sig, sum []byte) error {
	if k.ed25519 {
		return errEd25519Digest
	}
	if err := k.verifier.VerifySignature(bytes.NewReader(sig), nil, options.WithDigest(sum)); err != nil {
		return errors.New("signature does not match the key")
	}
	return nil
}
