package signature_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/shimkit/shimkit/signature"
)

// TestNotFoundIsMissing: a signature URL that answered "not found" is a
// missing signature (the SignatureMissing reason of the operator and the
// installer), and says so in its own words.
func TestNotFoundIsMissing(t *testing.T) {
	err := fmt.Errorf("spec.fetchStrategy.anonHttp.signature: %w (%w)", signature.ErrNotFound, errors.New("get https://example.com/x.sig: 404 Not Found"))
	if !errors.Is(err, signature.ErrNotFound) || !errors.Is(err, signature.ErrMissing) {
		t.Errorf("errors.Is: ErrNotFound %v, ErrMissing %v", errors.Is(err, signature.ErrNotFound), errors.Is(err, signature.ErrMissing))
	}
	if errors.Is(err, signature.ErrInvalid) || errors.Is(signature.ErrMissing, signature.ErrNotFound) {
		t.Error("ErrNotFound matches more than it is")
	}
	if got := signature.ErrNotFound.Error(); got != "signature not found" {
		t.Errorf("ErrNotFound reads %q", got)
	}
}
