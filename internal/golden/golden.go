// Package golden compares test output with golden files in testdata, and
// rewrites them when a test runs with -update. Standard library only, so
// that pure packages' tests can use it without linking a client.
package golden

import (
	"bytes"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Check compares got with the golden file at path, after writing got
// there when update is set, and returns the file's content. A difference
// fails the test with a diff (-want +got) and the command that rewrites
// the file.
func Check(t testing.TB, path string, got []byte, update bool) []byte {
	t.Helper()
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update writes it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("differs from %s (-want +got; -update rewrites it):\n%s", path, cmp.Diff(string(want), string(got)))
	}
	return want
}
