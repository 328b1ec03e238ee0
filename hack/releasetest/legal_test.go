package releasetest

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// license is the SPDX ID every artifact of a release names.
const license = "Apache-2.0"

// checkLegal: files (an artifact's LICENSE and NOTICE, by those names)
// are the repository's.
func checkLegal(t *testing.T, what string, files map[string][]byte) {
	t.Helper()
	for _, name := range []string{"LICENSE", "NOTICE"} {
		want, err := os.ReadFile(filepath.Join(repoRoot(), name))
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := files[name]; !ok || !bytes.Equal(got, want) {
			t.Errorf("%s: %s is not the repository's (%d bytes, present %v)", what, name, len(got), ok)
		}
	}
}

// filesInTar reads the named files (with or without a leading /) of a tar
// stream; the missing ones are absent from the map.
func filesInTar(t *testing.T, r io.Reader, names ...string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if strings.TrimPrefix(h.Name, "/") == n {
				data, err := io.ReadAll(tr)
				if err != nil {
					t.Fatal(err)
				}
				out[n] = data
			}
		}
	}
}

// legalOf renames an image's /licenses files to their base names.
func legalOf(files map[string][]byte) map[string][]byte {
	out := map[string][]byte{}
	for n, data := range files {
		if rest, ok := strings.CutPrefix(n, "licenses/"); ok {
			out[rest] = data
		}
	}
	return out
}
