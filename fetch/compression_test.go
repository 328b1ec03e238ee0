package fetch_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/shimkit/shimkit/fetch"
)

// gvisorFiles is the layout of testdata/gvisor.tar.*: gVisor's release
// tarball in small (runsc, its containerd shim and the gvisor-bin
// directory of sidecars), each file holding its name's last element and a
// newline. GNU tar wrote them:
//
//	tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=2026-10-05 -cjf gvisor.tar.bz2 runsc containerd-shim-runsc-v1 gvisor-bin
//	tar ... --zstd -cf gvisor.tar.zst ...
var gvisorFiles = map[string]string{
	"runsc":                          "runsc\n",
	"containerd-shim-runsc-v1":       "shim\n",
	"gvisor-bin/gvisor_sentry":       "sentry\n",
	"gvisor-bin/runsc-metric-server": "metrics\n",
}

// TestCompressedTarballs: a tarball compressed as released shims are
// (gVisor publishes gvisor.tar.bz2 and gvisor.tar.zstd) is recognised by
// content, whatever its name, and extracted whole.
func TestCompressedTarballs(t *testing.T) {
	zst, err := os.ReadFile("testdata/gvisor.tar.zst")
	if err != nil {
		t.Fatal(err)
	}
	dec, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := dec.DecodeAll(zst, nil)
	dec.Close()
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"bzip2": read(t, "testdata/gvisor.tar.bz2"),
		"zstd":  zst,
		"gzip":  gz(t, plain),
		"tar":   plain,
	} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "artifact")
			if err := os.WriteFile(file, data, 0o644); err != nil {
				t.Fatal(err)
			}
			dest := filepath.Join(t.TempDir(), "dest")
			res, err := (&fetch.LocalFetcher{Path: file}).Fetch(context.Background(), amd64, dest)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for f, body := range gvisorFiles {
				want = append(want, f)
				if got, err := os.ReadFile(filepath.Join(dest, f)); err != nil || string(got) != body {
					t.Errorf("%s = %q, %v; want %q", f, got, err, body)
				}
			}
			slices.Sort(want)
			if !slices.Equal(res.Files, want) {
				t.Errorf("files = %v, want %v", res.Files, want)
			}
			if !slices.Equal(res.Executables, []string{"containerd-shim-runsc-v1"}) {
				t.Errorf("executables = %v, want the shim alone", res.Executables)
			}
		})
	}
}

// TestBrokenCompressedTarballs: a truncated stream, or a zstd frame that
// asks for a window over the decoder's bound (1 GiB), fails naming the
// compression and leaves the destination empty.
func TestBrokenCompressedTarballs(t *testing.T) {
	bz2, zst := read(t, "testdata/gvisor.tar.bz2"), read(t, "testdata/gvisor.tar.zst")
	for _, tt := range []struct {
		name string
		data []byte
		want error
	}{
		{"bzip2", bz2[:len(bz2)/2], io.ErrUnexpectedEOF},
		{"zstd", zst[:len(zst)/2], io.ErrUnexpectedEOF},
		// Magic, a frame header descriptor without a content size, and a
		// window descriptor of exponent 20: a window of 2^30 bytes.
		{"zstd", []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 20 << 3, 0x01, 0x00, 0x00}, fetch.ErrLimit},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "artifact")
			if err := os.WriteFile(file, tt.data, 0o644); err != nil {
				t.Fatal(err)
			}
			dest := filepath.Join(t.TempDir(), "dest")
			_, err := (&fetch.LocalFetcher{Path: file}).Fetch(context.Background(), amd64, dest)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.name+": ") {
				t.Fatalf("err = %v, want %v naming %s", err, tt.want, tt.name)
			}
			assertEmpty(t, dest)
		})
	}
}

func read(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
