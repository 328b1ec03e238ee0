package fetch_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/shimkit/shimkit/fetch"
)

// entry is one tar entry of a test archive.
type entry struct {
	name     string
	typ      byte
	body     string
	link     string
	size     int64 // declared size when no body is written (a lying header)
	noWrite  bool
	devMajor int64
}

// tarGz builds a .tar.gz from entries, writing raw headers when an entry
// declares a size it does not carry.
func tarGz(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		hdr := &tar.Header{Name: e.name, Typeflag: typ, Mode: 0o755, Linkname: e.link, Devmajor: e.devMajor, Format: tar.FormatPAX}
		if typ == tar.TypeReg {
			hdr.Size = int64(len(e.body))
			if e.size > 0 {
				hdr.Size = e.size
			}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if e.noWrite {
			// Leave the archive here: the header promises more than follows.
			return gz(t, raw.Bytes())
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return gz(t, raw.Bytes())
}

func gz(t testing.TB, b []byte) []byte {
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

const shimName = "containerd-shim-demo-v2"

// TestHostileArchives feeds archives built to escape or exhaust the
// destination; each is rejected with a specific error and leaves nothing
// in the destination, nor anywhere outside it.
func TestHostileArchives(t *testing.T) {
	shim := entry{name: shimName, body: "#!/bin/sh\n"}
	many := []entry{shim}
	for i := range 100_000 {
		many = append(many, entry{name: "f/" + strconv.Itoa(i), body: ""})
	}
	tests := []struct {
		name    string
		archive []byte
		limits  fetch.Limits
		want    error
	}{
		{"path traversal", tarGz(t, shim, entry{name: "../../escape", body: "x"}), fetch.Limits{}, fetch.ErrUnsafeArchive},
		{"traversal inside a path", tarGz(t, shim, entry{name: "a/../../escape", body: "x"}), fetch.Limits{}, fetch.ErrUnsafeArchive},
		{"absolute path", tarGz(t, shim, entry{name: "/etc/cron.d/evil", body: "x"}), fetch.Limits{}, fetch.ErrUnsafeArchive},
		{"absolute symlink", tarGz(t, shim, entry{name: "etc", typ: tar.TypeSymlink, link: "/etc"}), fetch.Limits{}, fetch.ErrUnsafeArchive},
		{"relative symlink escape", tarGz(t, shim, entry{name: "a/up", typ: tar.TypeSymlink, link: "../../.."}), fetch.Limits{}, fetch.ErrUnsafeArchive},
		{"write through a symlink", tarGz(t, shim, entry{name: "d", typ: tar.TypeSymlink, link: "."}, entry{name: "d/../../x", body: "x"}), fetch.Limits{}, fetch.ErrUnsafeArchive},
		{"hardlink escape", tarGz(t, shim, entry{name: "passwd", typ: tar.TypeLink, link: "../../../etc/passwd"}), fetch.Limits{}, fetch.ErrUnsafeArchive},
		{"hardlink to absolute path", tarGz(t, shim, entry{name: "passwd", typ: tar.TypeLink, link: "/etc/passwd"}), fetch.Limits{}, fetch.ErrUnsafeArchive},
		{"character device", tarGz(t, shim, entry{name: "mem", typ: tar.TypeChar, devMajor: 1}), fetch.Limits{}, fetch.ErrUnsafeArchive},
		{"block device", tarGz(t, shim, entry{name: "sda", typ: tar.TypeBlock, devMajor: 8}), fetch.Limits{}, fetch.ErrUnsafeArchive},
		{"fifo", tarGz(t, shim, entry{name: "pipe", typ: tar.TypeFifo}), fetch.Limits{}, fetch.ErrUnsafeArchive},
		{"entry declaring 10 GiB", tarGz(t, shim, entry{name: "big", size: 10 << 30, noWrite: true}), fetch.Limits{}, fetch.ErrLimit},
		{"100,000 entries", tarGz(t, many...), fetch.Limits{}, fetch.ErrLimit},
		{"total over the limit", tarGz(t, shim, entry{name: "a", body: strings.Repeat("a", 600)}, entry{name: "b", body: strings.Repeat("b", 600)}), fetch.Limits{MaxTotal: 1000}, fetch.ErrLimit},
		{"no shim binary", tarGz(t, entry{name: "README", body: "hi"}), fetch.Limits{}, fetch.ErrNoShim},
		{"shim name is a directory trick", tarGz(t, entry{name: "containerd-shim-x-v2/", typ: tar.TypeDir}), fetch.Limits{}, fetch.ErrNoShim},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			outer := t.TempDir()
			file := filepath.Join(t.TempDir(), "artifact.tar.gz")
			if err := os.WriteFile(file, tt.archive, 0o644); err != nil {
				t.Fatal(err)
			}
			dest := filepath.Join(outer, "dest")
			_, err := (&fetch.LocalFetcher{Path: file, Options: fetch.Options{Limits: tt.limits}}).Fetch(context.Background(), amd64, dest)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			assertEmpty(t, dest)
			if entries, _ := os.ReadDir(outer); len(entries) > 1 || len(entries) == 1 && entries[0].Name() != "dest" {
				t.Errorf("written outside the destination: %v", entries)
			}
		})
	}
}

// TestOnlyShimsBecomeExecutable: archive modes are not trusted.
func TestOnlyShimsBecomeExecutable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a.tar")
	archive := tarGz(t, entry{name: "bin/" + shimName, body: "shim"}, entry{name: "install.sh", body: "rm -rf /"}, entry{name: "lib", typ: tar.TypeDir}, entry{name: "current", typ: tar.TypeSymlink, link: "bin"})
	if err := os.WriteFile(file, archive, 0o644); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), "d")
	res, err := (&fetch.LocalFetcher{Path: file}).Fetch(context.Background(), amd64, dest)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Executables) != 1 || res.Executables[0] != "bin/"+shimName {
		t.Errorf("executables = %v", res.Executables)
	}
	if fi, _ := os.Stat(filepath.Join(dest, "install.sh")); fi.Mode().Perm()&0o111 != 0 {
		t.Errorf("install.sh is executable: %v", fi.Mode())
	}
	if target, err := os.Readlink(filepath.Join(dest, "current")); err != nil || target != "bin" {
		t.Errorf("symlink inside the destination: %q %v", target, err)
	}
}
