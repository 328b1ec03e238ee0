package testutil

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// ArchiveFile is one regular file of a test archive.
type ArchiveFile struct {
	Name string
	Mode int64
	Data []byte
}

// Archive is a packed .tar.gz and its hex sha256.
type Archive struct {
	Data   []byte
	SHA256 string
}

// NewArchive packs files, in order, into a .tar.gz: a bundle artifact.
func NewArchive(t testing.TB, files ...ArchiveFile) Archive {
	t.Helper()
	var buf bytes.Buffer
	// The fastest compression: a test's archives hold binaries of tens
	// of megabytes, and the default level took most of a test's CPU.
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(gz)
	for _, f := range files {
		hdr := &tar.Header{Name: f.Name, Mode: f.Mode, Size: int64(len(f.Data)), Typeflag: tar.TypeReg, ModTime: time.Unix(1700000000, 0)}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.Data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return Archive{Data: buf.Bytes(), SHA256: SHA256Hex(buf.Bytes())}
}

// Zstd returns the archive's tar compressed with zstd instead of gzip, as
// gVisor releases its gvisor.tar.zstd.
func (a Archive) Zstd(t testing.TB) Archive {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(a.Data))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw, err := zstd.NewWriter(&buf, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(zw, zr); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return Archive{Data: buf.Bytes(), SHA256: SHA256Hex(buf.Bytes())}
}
