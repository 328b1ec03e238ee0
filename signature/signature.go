package signature

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/opencontainers/go-digest"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
)

// Policy says who must have signed an artifact. A signature by any one of
// PublicKeys, or by the Keyless identity, suffices.
type Policy struct {
	// PublicKeys are PEM public keys ("PUBLIC KEY" or "RSA PUBLIC KEY"):
	// ECDSA P-256, P-384 or P-521, RSA 2048, 3072 or 4096, or Ed25519.
	PublicKeys [][]byte
	// Keyless is a certificate identity issued by a Fulcio CA of a sigstore
	// trusted root.
	Keyless *Keyless
}

// Keyless is a sigstore certificate identity: the OIDC issuer that
// authenticated the signer, and the signer (the certificate's subject
// alternative name: an email, a workflow URI...).
type Keyless struct {
	// Issuer must equal the certificate's OIDC issuer extension.
	Issuer string
	// Subject must equal the certificate's subject alternative name;
	// SubjectRegExp must match it (Go syntax, unanchored unless it says
	// so). Exactly one of the two is set.
	Subject, SubjectRegExp string
	// TrustedRoot is a sigstore trusted_root.json: the Fulcio CAs, and the
	// transparency logs, timestamp authorities and CT logs that vouch for
	// when a short-lived certificate was used.
	TrustedRoot []byte
}

// Signer says what verified a signature: "key sha256:<16 hex digits>" (the
// start of the sha256 of the key's DER SubjectPublicKeyInfo) or
// "keyless <issuer> <subject>".
type Signer struct {
	Description string
}

// String returns the description.
func (s *Signer) String() string { return s.Description }

var _ fmt.Stringer = (*Signer)(nil)

var (
	// ErrMissing: nothing that claims to sign the digest was found.
	ErrMissing = errors.New("no signature")
	// ErrInvalid: signatures were found, none verifies with the policy.
	ErrInvalid = errors.New("signature does not verify")
	// ErrPolicy: the policy itself is unusable; the error names the field.
	ErrPolicy = errors.New("invalid verification policy")
	// ErrNotFound: the place a signature is published at (a signature
	// URL) answered that there is nothing there. It is a kind of
	// ErrMissing: errors.Is(err, ErrMissing) holds for it too.
	ErrNotFound error = notFound{}
)

// notFound is ErrNotFound.
type notFound struct{}

func (notFound) Error() string { return "signature not found" }

// Is makes errors.Is(ErrNotFound, ErrMissing) true.
func (notFound) Is(target error) bool { return target == ErrMissing }

// Limits against a hostile registry or signature file.
const (
	maxDocument   = 1 << 20 // a manifest, a bundle, a simple-signing payload
	maxCandidates = 16      // bundle referrers tried, and legacy layers tried
	maxPages      = 16      // pages of a referrers listing read
)

// Verifier checks signatures against a Policy. It is immutable and safe for
// concurrent use.
type Verifier struct {
	keys    []*trustedKey
	keyless *keylessVerifier
}

// keylessVerifier is a sigstore-go verifier bound to one trusted root and
// one certificate identity.
type keylessVerifier struct {
	verifier *verify.Verifier
	identity verify.CertificateIdentity
}

// NewVerifier checks the policy and prepares its keys and trusted root. An
// unusable policy fails with ErrPolicy naming the field, e.g.
// "publicKeys[1]" or "keyless.trustedRoot".
func NewVerifier(p Policy) (*Verifier, error) {
	if len(p.PublicKeys) == 0 && p.Keyless == nil {
		return nil, fmt.Errorf("%w: neither publicKeys nor keyless is set", ErrPolicy)
	}
	v := &Verifier{}
	for i, pemKey := range p.PublicKeys {
		k, err := newTrustedKey(pemKey)
		if err != nil {
			return nil, fmt.Errorf("%w: publicKeys[%d]: %w", ErrPolicy, i, err)
		}
		v.keys = append(v.keys, k)
	}
	if p.Keyless != nil {
		kv, err := newKeylessVerifier(p.Keyless)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrPolicy, err)
		}
		v.keyless = kv
	}
	return v, nil
}

// newKeylessVerifier checks a Keyless policy; its errors name the field.
func newKeylessVerifier(k *Keyless) (*keylessVerifier, error) {
	if k.Issuer == "" {
		return nil, errors.New("keyless.issuer: empty")
	}
	switch {
	case k.Subject == "" && k.SubjectRegExp == "":
		return nil, errors.New("keyless.subject: one of subject and subjectRegExp is needed")
	case k.Subject != "" && k.SubjectRegExp != "":
		return nil, errors.New("keyless.subjectRegExp: set only one of subject and subjectRegExp")
	case k.SubjectRegExp != "":
		if _, err := regexp.Compile(k.SubjectRegExp); err != nil {
			return nil, fmt.Errorf("keyless.subjectRegExp: %w", err)
		}
	}
	identity, err := verify.NewShortCertificateIdentity(k.Issuer, "", k.Subject, k.SubjectRegExp)
	if err != nil {
		return nil, fmt.Errorf("keyless.subject: %w", err)
	}
	if len(k.TrustedRoot) == 0 {
		return nil, errors.New("keyless.trustedRoot: empty")
	}
	tr, err := root.NewTrustedRootFromJSON(k.TrustedRoot)
	if err != nil {
		return nil, fmt.Errorf("keyless.trustedRoot: %w", err)
	}
	if len(tr.FulcioCertificateAuthorities()) == 0 {
		return nil, errors.New("keyless.trustedRoot: no certificate authority")
	}
	// What sigstore's standard verification asks of this trusted root: a
	// trusted time for the short-lived certificate (a transparency log
	// entry or a signed timestamp), an entry in each kind of log it lists.
	opts := []verify.VerifierOption{verify.WithObserverTimestamps(1), verify.WithoutStatementPredicate()}
	if len(tr.RekorLogs()) > 0 {
		opts = append(opts, verify.WithTransparencyLog(1))
	} else if len(tr.TimestampingAuthorities()) == 0 {
		return nil, errors.New("keyless.trustedRoot: no transparency log and no timestamp authority")
	}
	if len(tr.CTLogs()) > 0 {
		opts = append(opts, verify.WithSignedCertificateTimestamps(1))
	}
	sv, err := verify.NewVerifier(tr, opts...)
	if err != nil {
		return nil, fmt.Errorf("keyless.trustedRoot: %w", err)
	}
	return &keylessVerifier{verifier: sv, identity: identity}, nil
}

// attempts collects why each candidate signature failed, to report them
// all when none verifies.
type attempts struct {
	invalid   []string // candidates that were read and did not verify
	transport []error  // candidates or listings that could not be read
}

func (a *attempts) fail(what string, err error) {
	a.invalid = append(a.invalid, what+": "+err.Error())
}

func (a *attempts) unreadable(what string, err error) {
	a.transport = append(a.transport, fmt.Errorf("%s: %w", what, err))
}

// record notes a candidate's failure, as unreadable or as invalid.
func (a *attempts) record(what string, err error) {
	if _, ok := errors.AsType[*unreadableError](err); ok {
		a.unreadable(what, err)
		return
	}
	a.fail(what, err)
}

// err is the error once no candidate verified: ErrInvalid when some
// candidate was read and failed, the read errors when nothing could be
// read, ErrMissing when there was nothing at all.
func (a *attempts) err(subject, none string) error {
	switch {
	case len(a.invalid) > 0:
		msg := strings.Join(a.invalid, "; ")
		if len(a.transport) > 0 {
			msg += "; " + joined(a.transport).Error()
		}
		return fmt.Errorf("%s: %w: %s", subject, ErrInvalid, msg)
	case len(a.transport) > 0:
		return fmt.Errorf("%s: reading signatures: %w", subject, joined(a.transport))
	default:
		return fmt.Errorf("%s: %w: %s", subject, ErrMissing, none)
	}
}

// joined is errors.Join on one line.
type joined []error

func (j joined) Error() string {
	msgs := make([]string, len(j))
	for i, err := range j {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (j joined) Unwrap() []error { return j }

// checkDigest accepts a valid sha256 digest.
func checkDigest(d digest.Digest) error {
	if err := d.Validate(); err != nil {
		return fmt.Errorf("digest %q: %w", d, err)
	}
	if d.Algorithm() != digest.SHA256 {
		return fmt.Errorf("digest %s: only sha256 is supported", d)
	}
	return nil
}
