package fetch

import (
	"archive/tar"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzExtract feeds arbitrary bytes (tar, gzip or anything) to the
// extractor: whatever it accepts or rejects, nothing is ever written outside
// the destination, and every symlink it leaves points inside it.
func FuzzExtract(f *testing.F) {
	for _, entries := range [][]tar.Header{
		{{Name: "containerd-shim-a-v2", Typeflag: tar.TypeReg, Size: 2}},
		{{Name: "../x", Typeflag: tar.TypeReg, Size: 2}},
		{{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "../../etc"}, {Name: "l/passwd", Typeflag: tar.TypeReg, Size: 2}},
		{{Name: "h", Typeflag: tar.TypeLink, Linkname: "/etc/passwd"}},
		{{Name: "d/", Typeflag: tar.TypeDir}, {Name: "d/containerd-shim-b-v2", Typeflag: tar.TypeReg, Size: 2}, {Name: "s", Typeflag: tar.TypeSymlink, Linkname: "d"}},
	} {
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		for _, h := range entries {
			h.Mode = 0o755
			if err := tw.WriteHeader(&h); err != nil {
				f.Fatal(err)
			}
			if h.Size > 0 {
				_, _ = tw.Write([]byte("hi"))
			}
		}
		_ = tw.Close()
		f.Add(b.Bytes())
	}
	f.Add([]byte("\x7fELF not really"))
	f.Add([]byte{0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0})
	for _, name := range []string{"testdata/gvisor.tar.bz2", "testdata/gvisor.tar.zst"} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		outer := t.TempDir()
		blob := filepath.Join(t.TempDir(), "blob")
		if err := os.WriteFile(blob, data, 0o644); err != nil {
			t.Fatal(err)
		}
		dest := filepath.Join(outer, "dest")
		_, _, err := extract(blob, dest, "containerd-shim-fuzz-v2", Options{Limits: Limits{MaxTotal: 1 << 20, MaxFile: 1 << 20, MaxEntries: 200}})
		entries, _ := os.ReadDir(outer)
		for _, e := range entries {
			if e.Name() != "dest" {
				t.Fatalf("wrote %s outside the destination", e.Name())
			}
		}
		if err != nil {
			if left, _ := os.ReadDir(dest); len(left) != 0 {
				t.Fatalf("failed extraction left %v", left)
			}
			return
		}
		_ = filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.Type()&fs.ModeSymlink == 0 {
				return err
			}
			target, _ := os.Readlink(p)
			resolved := filepath.Join(filepath.Dir(p), target)
			if filepath.IsAbs(target) || !strings.HasPrefix(resolved, dest+string(filepath.Separator)) && resolved != dest {
				t.Fatalf("symlink %s -> %s leaves the destination", p, target)
			}
			return nil
		})
	})
}
