package signtest

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	sigsig "github.com/sigstore/sigstore/pkg/signature"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
)

// The formats cosign writes, as the signature package reads them.
const (
	sigstoreBundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"
	cosignSignPredicate     = "https://sigstore.dev/cosign/sign/v1"
	inTotoPayloadType       = "application/vnd.in-toto+json"
	simpleSigningMediaType  = "application/vnd.dev.cosign.simplesigning.v1+json"
)

// SigningKey is a private key made for one test, signing as cosign does.
type SigningKey struct {
	priv    crypto.Signer
	details sigsig.AlgorithmDetails // the key's hash, as sigstore chooses it
	hint    []byte                  // base64 sha256 of the public key, as in bundles
}

// NewSigningKey generates an ECDSA P-256 key, cosign's default.
func NewSigningKey(t testing.TB) *SigningKey {
	t.Helper()
	return NewSigningKeyFrom(t, must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))(t))
}

// NewSigningKeyFrom signs with priv: an *ecdsa.PrivateKey, *rsa.PrivateKey
// or ed25519.PrivateKey, hashed as sigstore does for that key.
func NewSigningKeyFrom(t testing.TB, priv crypto.Signer) *SigningKey {
	t.Helper()
	sum := sha256.Sum256(must(x509.MarshalPKIXPublicKey(priv.Public()))(t))
	return &SigningKey{priv: priv, details: must(sigsig.GetDefaultAlgorithmDetails(priv.Public()))(t),
		hint: []byte(base64.StdEncoding.EncodeToString(sum[:]))}
}

// PublicKeyPEM returns the public key as a PEM "PUBLIC KEY" block.
func (k *SigningKey) PublicKeyPEM() []byte {
	data, err := cryptoutils.MarshalPublicKeyToPEM(k.priv.Public())
	if err != nil {
		panic(err) // a key of NewSigningKeyFrom always marshals
	}
	return data
}

// SignOCI signs the manifest or index at ref (host/repo:tag or
// host/repo@digest in a test registry, plain HTTP, anonymous) as cosign 3
// does: a sigstore bundle, a DSSE in-toto statement naming the digest,
// attached as an OCI referrer. It returns the signed digest.
func (k *SigningKey) SignOCI(t testing.TB, ref string) digest.Digest {
	t.Helper()
	repo, subject := resolveRef(t, ref)
	attachBundle(t, repo, subject, k.statementBundle(t, statement(t, repo.Reference.Repository, subject.Digest)))
	return subject.Digest
}

// SignOCILegacy signs the manifest or index at ref with the cosign tag
// scheme: a simple-signing payload in tag sha256-<hex>.sig.
func (k *SigningKey) SignOCILegacy(t testing.TB, ref string) digest.Digest {
	t.Helper()
	ctx := context.Background()
	repo, subject := resolveRef(t, ref)
	payload := must(json.Marshal(map[string]any{
		"critical": map[string]any{
			"identity": map[string]string{"docker-reference": repo.Reference.Registry + "/" + repo.Reference.Repository},
			"image":    map[string]string{"docker-manifest-digest": subject.Digest.String()},
			"type":     "cosign container image signature",
		},
		"optional": nil,
	}))(t)
	sig, _, err := (*keypair)(k).SignData(ctx, payload)
	if err != nil {
		t.Fatal(err)
	}
	layer := pushBlob(t, repo, simpleSigningMediaType, payload)
	layer.Annotations = map[string]string{"dev.cosignproject.cosign/signature": base64.StdEncoding.EncodeToString(sig)}
	desc := must(oras.PackManifest(ctx, repo, oras.PackManifestVersion1_0, ocispec.MediaTypeImageConfig,
		oras.PackManifestOptions{Layers: []ocispec.Descriptor{layer}}))(t)
	tag := subject.Digest.Algorithm().String() + "-" + subject.Digest.Encoded() + ".sig"
	if err := repo.Tag(ctx, desc, tag); err != nil {
		t.Fatalf("tag %s: %v", tag, err)
	}
	return subject.Digest
}

// SignBlob returns a sigstore bundle (JSON) for the artifact of sha256 d,
// as cosign sign-blob --bundle writes it: a message signature over the
// digest. An Ed25519 key, which cannot sign a bare digest, gets a DSSE
// in-toto statement naming d instead.
func (k *SigningKey) SignBlob(t testing.TB, d digest.Digest) []byte {
	t.Helper()
	if k.details.GetHashType() == crypto.Hash(0) {
		return k.statementBundle(t, statement(t, "blob", d))
	}
	sum := digestBytes(t, d)
	pb := &protobundle.Bundle{
		MediaType: sigstoreBundleMediaType,
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_PublicKey{PublicKey: &protocommon.PublicKeyIdentifier{Hint: string(k.hint)}},
		},
		Content: &protobundle.Bundle_MessageSignature{MessageSignature: &protocommon.MessageSignature{
			MessageDigest: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: sum},
			Signature:     k.signDigest(t, sum),
		}},
	}
	return marshalBundle(t, pb)
}

// DetachedSignature returns a base64 signature over the artifact of sha256
// d, as cosign sign-blob --output-signature writes it. ECDSA and RSA keys
// only: Ed25519 signs the artifact itself, which the helper does not have.
func (k *SigningKey) DetachedSignature(t testing.TB, d digest.Digest) []byte {
	t.Helper()
	return []byte(base64.StdEncoding.EncodeToString(k.signDigest(t, digestBytes(t, d))))
}

// signDigest signs a sha256 digest with the standard library's signer.
func (k *SigningKey) signDigest(t testing.TB, sum []byte) []byte {
	t.Helper()
	if k.details.GetHashType() == crypto.Hash(0) {
		t.Fatal("an Ed25519 key cannot sign a bare digest")
	}
	return must(k.priv.Sign(rand.Reader, sum, crypto.SHA256))(t)
}

// statementBundle signs an in-toto statement in a DSSE envelope, as cosign
// 3 signs an image.
func (k *SigningKey) statementBundle(t testing.TB, stmt []byte) []byte {
	t.Helper()
	return marshalBundle(t, must(sign.Bundle(&sign.DSSEData{Data: stmt, PayloadType: inTotoPayloadType}, (*keypair)(k), sign.BundleOptions{}))(t))
}

// statement is the in-toto statement cosign 3 signs for an image.
func statement(t testing.TB, name string, d digest.Digest) []byte {
	t.Helper()
	return must(json.Marshal(map[string]any{
		"_type":         "https://in-toto.io/Statement/v1",
		"subject":       []map[string]any{{"name": name, "digest": map[string]string{d.Algorithm().String(): d.Encoded()}}},
		"predicateType": cosignSignPredicate,
		"predicate":     map[string]any{},
	}))(t)
}

func marshalBundle(t testing.TB, pb *protobundle.Bundle) []byte {
	t.Helper()
	return must(protojson.Marshal(pb))(t)
}

// must(f())(t) is f's value, or a fatal error of t.
func must[T any](v T, err error) func(testing.TB) T {
	return func(t testing.TB) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func digestBytes(t testing.TB, d digest.Digest) []byte {
	t.Helper()
	if err := d.Validate(); err != nil || d.Algorithm() != digest.SHA256 {
		t.Fatalf("need a sha256 digest, got %q", d)
	}
	return must(hex.DecodeString(d.Encoded()))(t)
}

// resolveRef opens the repository of ref (plain HTTP, anonymous) and
// resolves ref to the descriptor to sign.
func resolveRef(t testing.TB, ref string) (*remote.Repository, ocispec.Descriptor) {
	t.Helper()
	parsed, err := registry.ParseReference(ref)
	if err != nil {
		t.Fatalf("reference %q: %v", ref, err)
	}
	repo := must(remote.NewRepository(parsed.Registry + "/" + parsed.Repository))(t)
	repo.PlainHTTP = true
	subject, err := repo.Resolve(context.Background(), parsed.Reference)
	if err != nil {
		t.Fatalf("resolve %s: %v", ref, err)
	}
	return repo, ocispec.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size}
}

// attachBundle pushes a bundle as a cosign 3 referrer of subject. Where the
// registry has no referrers API, oras-go maintains the referrers tag
// schema (an index in tag sha256-<hex>) instead.
func attachBundle(t testing.TB, repo *remote.Repository, subject ocispec.Descriptor, data []byte) {
	t.Helper()
	layer := pushBlob(t, repo, sigstoreBundleMediaType, data)
	_, err := oras.PackManifest(context.Background(), repo, oras.PackManifestVersion1_1, sigstoreBundleMediaType, oras.PackManifestOptions{
		Subject: &subject,
		Layers:  []ocispec.Descriptor{layer},
		ManifestAnnotations: map[string]string{
			"dev.sigstore.bundle.content":       "dsse-envelope",
			"dev.sigstore.bundle.predicateType": cosignSignPredicate,
		},
	})
	if err != nil {
		t.Fatalf("attach signature to %s: %v", subject.Digest, err)
	}
}

func pushBlob(t testing.TB, repo *remote.Repository, mediaType string, data []byte) ocispec.Descriptor {
	t.Helper()
	desc := content.NewDescriptorFromBytes(mediaType, data)
	if err := repo.Push(context.Background(), desc, bytes.NewReader(data)); err != nil {
		t.Fatalf("push %s blob: %v", mediaType, err)
	}
	return desc
}

// keypair adapts a SigningKey to sigstore-go's sign.Keypair.
type keypair SigningKey

var _ sign.Keypair = (*keypair)(nil)

func (k *keypair) GetHashAlgorithm() protocommon.HashAlgorithm { return k.details.GetProtoHashType() }
func (k *keypair) GetSigningAlgorithm() protocommon.PublicKeyDetails {
	return k.details.GetSignatureAlgorithm()
}
func (k *keypair) GetHint() []byte { return k.hint }
func (k *keypair) GetKeyAlgorithm() string {
	return map[sigsig.PublicKeyType]string{sigsig.RSA: "RSA", sigsig.ECDSA: "ECDSA", sigsig.ED25519: "ED25519"}[k.details.GetKeyType()]
}
func (k *keypair) GetPublicKey() crypto.PublicKey { return k.priv.Public() }
func (k *keypair) GetPublicKeyPem() (string, error) {
	data, err := cryptoutils.MarshalPublicKeyToPEM(k.priv.Public())
	return string(data), err
}

// SignData hashes data with the key's hash (none for Ed25519) and signs it.
func (k *keypair) SignData(_ context.Context, data []byte) ([]byte, []byte, error) {
	hf := k.details.GetHashType()
	toSign := data
	if hf != crypto.Hash(0) {
		h := hf.New()
		h.Write(data)
		toSign = h.Sum(nil)
	}
	sig, err := k.priv.Sign(rand.Reader, toSign, hf)
	return sig, toSign, err
}

// KeylessSigner signs as a keyless (Fulcio) identity of a virtual sigstore
// made for one test: its own CA, transparency log and timestamp authority.
type KeylessSigner struct {
	vs              *ca.VirtualSigstore
	issuer, subject string
	trustedRoot     []byte
}

// NewKeylessSigner creates a virtual sigstore that certifies subject (an
// email SAN) as authenticated by issuer. Sign within an hour: the virtual
// CA and log expire then.
func NewKeylessSigner(t testing.TB, issuer, subject string) *KeylessSigner {
	t.Helper()
	vs := must(ca.NewVirtualSigstore())(t)
	// The virtual log's ID is its hex key ID as text; a trusted root holds
	// the raw bytes. No CT log: the virtual CA embeds no SCTs.
	logs := map[string]*root.TransparencyLog{}
	for id, l := range vs.RekorLogs() {
		c := *l
		c.ID = must(hex.DecodeString(string(l.ID)))(t)
		logs[id] = &c
	}
	tr := must(root.NewTrustedRoot(root.TrustedRootMediaType01, vs.FulcioCertificateAuthorities(), nil, vs.TimestampingAuthorities(), logs))(t)
	return &KeylessSigner{vs: vs, issuer: issuer, subject: subject, trustedRoot: must(tr.MarshalJSON())(t)}
}

// TrustedRootJSON returns the virtual sigstore's trusted_root.json.
func (s *KeylessSigner) TrustedRootJSON() []byte { return bytes.Clone(s.trustedRoot) }

// SignOCI signs the manifest or index at ref as cosign 3 keyless does and
// attaches the bundle as a referrer; see SigningKey.SignOCI.
func (s *KeylessSigner) SignOCI(t testing.TB, ref string) digest.Digest {
	t.Helper()
	repo, subject := resolveRef(t, ref)
	attachBundle(t, repo, subject, s.bundle(t, statement(t, repo.Reference.Repository, subject.Digest)))
	return subject.Digest
}

// SignBlob returns a keyless sigstore bundle for the artifact of sha256 d:
// a DSSE in-toto statement naming d, with a transparency log entry and a
// signed timestamp.
func (s *KeylessSigner) SignBlob(t testing.TB, d digest.Digest) []byte {
	t.Helper()
	return s.bundle(t, statement(t, "blob", d))
}

// bundle signs an in-toto statement with a fresh certificate, logs it and
// timestamps it, and writes the result as a v0.3 bundle.
func (s *KeylessSigner) bundle(t testing.TB, stmt []byte) []byte {
	t.Helper()
	// As the virtual sigstore's own Attest: logged within the
	// certificate's ten minutes, with an inclusion proof.
	ent := must(s.vs.AttestAtTime(s.subject, s.issuer, stmt, time.Now().Add(5*time.Minute), true))(t)
	env := must(ent.SignatureContent())(t).EnvelopeContent().RawEnvelope()
	envelope := &protodsse.Envelope{Payload: must(base64.StdEncoding.DecodeString(env.Payload))(t), PayloadType: env.PayloadType}
	for _, sg := range env.Signatures {
		envelope.Signatures = append(envelope.Signatures, &protodsse.Signature{Sig: must(base64.StdEncoding.DecodeString(sg.Sig))(t), Keyid: sg.KeyID})
	}
	cert := must(ent.VerificationContent())(t).Certificate()
	material := &protobundle.VerificationMaterial{
		Content:                   &protobundle.VerificationMaterial_Certificate{Certificate: &protocommon.X509Certificate{RawBytes: cert.Raw}},
		TimestampVerificationData: &protobundle.TimestampVerificationData{},
	}
	for _, ts := range must(ent.Timestamps())(t) {
		material.TimestampVerificationData.Rfc3161Timestamps = append(material.TimestampVerificationData.Rfc3161Timestamps,
			&protocommon.RFC3161SignedTimestamp{SignedTimestamp: ts})
	}
	for _, e := range must(ent.TlogEntries())(t) {
		material.TlogEntries = append(material.TlogEntries, s.logEntry(t, e))
	}
	return marshalBundle(t, &protobundle.Bundle{
		MediaType:            sigstoreBundleMediaType,
		VerificationMaterial: material,
		Content:              &protobundle.Bundle_DsseEnvelope{DsseEnvelope: envelope},
	})
}

// logEntry completes a virtual log entry as Rekor returns it: its kind and
// version, and a signed entry timestamp (the inclusion promise).
func (s *KeylessSigner) logEntry(t testing.TB, e *tlog.Entry) *protorekor.TransparencyLogEntry {
	t.Helper()
	tle := proto.CloneOf(e.TransparencyLogEntry())
	var kind struct {
		Kind       string `json:"kind"`
		APIVersion string `json:"apiVersion"`
	}
	if err := json.Unmarshal(tle.CanonicalizedBody, &kind); err != nil {
		t.Fatal(err)
	}
	tle.KindVersion = &protorekor.KindVersion{Kind: kind.Kind, Version: kind.APIVersion}
	set := must(s.vs.RekorSignPayload(tlog.RekorPayload{
		Body: e.Body(), IntegratedTime: tle.IntegratedTime, LogIndex: tle.LogIndex, LogID: hex.EncodeToString(tle.LogId.KeyId),
	}))(t)
	tle.InclusionPromise = &protorekor.InclusionPromise{SignedEntryTimestamp: set}
	return tle
}
