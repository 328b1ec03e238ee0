package golden_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/shimkit/shimkit/internal/golden"
)

type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Helper()               {}

// TestCheck: -update writes the file, a match passes, a difference fails.
func TestCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.golden")
	if got := golden.Check(t, path, []byte("one\n"), true); string(got) != "one\n" {
		t.Fatalf("update wrote %q", got)
	}
	r := &recorder{TB: t}
	golden.Check(r, path, []byte("one\n"), false)
	if r.failed {
		t.Error("a match failed")
	}
	golden.Check(r, path, []byte("two\n"), false)
	if data, _ := os.ReadFile(path); !r.failed || string(data) != "one\n" {
		t.Errorf("a difference: failed %v, file %q", r.failed, data)
	}
}
