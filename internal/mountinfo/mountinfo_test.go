package mountinfo_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/shimkit/shimkit/internal/mountinfo"
)

func TestPoints(t *testing.T) {
	p := filepath.Join(t.TempDir(), "mountinfo")
	data := "1 0 0:1 / / rw - overlay overlay rw\n2 1 0:2 / /proc rw - proc proc rw\nshort line\n3 1 0:3 / /dir\\040with\\040space rw - tmpfs tmpfs rw\n"
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := mountinfo.Points(p)
	if want := []string{"/", "/proc", "/dir with space"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("Points = %q, %v; want %q", got, err, want)
	}
	if _, err := mountinfo.Points(filepath.Join(t.TempDir(), "absent")); err == nil {
		t.Error("no error for a missing file")
	}
}

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{`/a\040b`: "/a b", `/plain`: "/plain", `/tab\011`: "/tab\t", `/end\040`: "/end ", `/odd\04`: `/odd\04`} {
		if got := mountinfo.Unescape(in); got != want {
			t.Errorf("Unescape(%q) = %q, want %q", in, got, want)
		}
	}
}
