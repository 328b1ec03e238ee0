package atomicfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/shimkit/shimkit/internal/atomicfile"
)

// TestWrite: a new file gets perm, a replaced one keeps its mode; with a
// tmpDir of its own no other file ever appears beside path; Remove of an
// absent file is no error.
func TestWrite(t *testing.T) {
	dir, tmpDir := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "a.conf")
	for _, c := range []struct {
		tmp  string
		data string
		perm os.FileMode
		want os.FileMode
	}{
		{"", "one", 0o600, 0o600},
		{tmpDir, "two", 0o644, 0o600}, // the mode of the file it replaces
	} {
		if err := atomicfile.Write(c.tmp, path, []byte(c.data), c.perm); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(path); string(got) != c.data || fi.Mode().Perm() != c.want {
			t.Errorf("wrote %q %v, want %q %v", got, fi.Mode().Perm(), c.data, c.want)
		}
		for _, d := range []string{dir, tmpDir} {
			entries, _ := os.ReadDir(d)
			if n := len(entries); d == dir && n != 1 || d == tmpDir && n != 0 {
				t.Errorf("%s holds %d entries after the write", d, n)
			}
		}
	}
	if err := atomicfile.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Remove(path); err != nil {
		t.Errorf("Remove of an absent file: %v", err)
	}
}
