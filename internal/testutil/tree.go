package testutil

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Tree maps every directory ("path/") and file under dir, by path relative
// to dir, to what a byte-for-byte comparison needs: a file's mode and
// content. Tests take one before and after an operation and compare them.
func Tree(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			out[rel+"/"] = ""
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out[rel] = fi.Mode().String() + "\n" + string(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// FileTree is Tree without the directories: for a writer that keeps a
// state directory of its own once it has one (crioconfig's
// /etc/crio/shimkit, its records and journal), whose files must still come
// back byte for byte.
func FileTree(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := Tree(t, dir)
	for k := range out {
		if strings.HasSuffix(k, "/") {
			delete(out, k)
		}
	}
	return out
}
