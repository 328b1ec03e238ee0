package fetch_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/shimkit/shimkit/fetch"
	"github.com/shimkit/shimkit/internal/testutil"
)

// artifact100MiB builds a .tar.gz of about 100 MiB: one shim-named file of
// pseudo-random (incompressible) bytes.
func artifact100MiB(b *testing.B) []byte {
	b.Helper()
	payload := make([]byte, 100<<20)
	r := rand.NewChaCha8([32]byte{1})
	_, _ = r.Read(payload)
	var raw bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&raw, gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(&tar.Header{Name: "containerd-shim-bench-v2", Mode: 0o755, Size: int64(len(payload)), Typeflag: tar.TypeReg}); err != nil {
		b.Fatal(err)
	}
	if _, err := tw.Write(payload); err != nil {
		b.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		b.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		b.Fatal(err)
	}
	return raw.Bytes()
}

// BenchmarkFetch100MiB compares fetch+verify+extract of a 100 MiB artifact
// from a local HTTP server with the usual shell pipeline doing the same
// (BENCHMARKS.md). Both run in the same process, against the same server.
func BenchmarkFetch100MiB(b *testing.B) {
	data := artifact100MiB(b)
	sum := testutil.SHA256Hex(data)
	srv := testutil.StartFileServer(b)
	url := srv.Add("/bench.tar.gz", data)
	limits := fetch.Limits{MaxDownload: 1 << 30, MaxFile: 1 << 30, MaxTotal: 1 << 30}

	b.Run("shimkit", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		f := fetch.NewHTTPFetcher(url, sum, fetch.Options{Limits: limits})
		for b.Loop() {
			dest := b.TempDir()
			res, err := f.Fetch(context.Background(), fetch.HostPlatform(), filepath.Join(dest, "d"))
			if err != nil || res.Digest.Encoded() != sum {
				b.Fatal(err)
			}
			b.StopTimer()
			os.RemoveAll(dest)
			b.StartTimer()
		}
	})
	b.Run("curl-tee-sha256sum-tar", func(b *testing.B) {
		if _, err := exec.LookPath("curl"); err != nil {
			b.Fatal("curl is needed for the baseline (apt-get install curl)")
		}
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			dest := b.TempDir()
			script := `curl -fsS "$1" | tee >(sha256sum > "$2/sum") | tar -xz -C "$2"; wait`
			out, err := exec.Command("bash", "-c", "set -o pipefail; "+script, "bench", url, dest).CombinedOutput()
			if err != nil {
				b.Fatalf("%v: %s", err, out)
			}
			b.StopTimer()
			got, _ := os.ReadFile(filepath.Join(dest, "sum"))
			if !strings.HasPrefix(string(got), sum) {
				b.Fatalf("baseline sha256sum %q", got)
			}
			os.RemoveAll(dest)
			b.StartTimer()
		}
	})
}

// streamServer serves size pseudo-random bytes, written from one 1 MiB
// buffer so that the server holds no copy of the whole stream, and returns
// the stream's digest.
func streamServer(tb testing.TB, size int) (string, digest.Digest) {
	tb.Helper()
	chunk := make([]byte, 1<<20)
	_, _ = rand.NewChaCha8([32]byte{2}).Read(chunk)
	h := sha256.New()
	for n := 0; n < size; n += len(chunk) {
		h.Write(chunk[:min(len(chunk), size-n)])
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(size))
		for n := 0; n < size; n += len(chunk) {
			if _, err := w.Write(chunk[:min(len(chunk), size-n)]); err != nil {
				return
			}
		}
	}))
	tb.Cleanup(srv.Close)
	return srv.URL + "/stream", digest.NewDigest(digest.SHA256, h)
}

// BenchmarkDigest100MiB pins a 100 MiB HTTP artifact: one download
// streamed through sha256, nothing on disk, memory independent of the
// size (see allocs and B/op).
func BenchmarkDigest100MiB(b *testing.B) {
	const size = 100 << 20
	url, want := streamServer(b, size)
	f := fetch.NewHTTPFetcher(url, "", fetch.Options{})
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		d, n, err := f.Digest(context.Background(), fetch.HostPlatform())
		if err != nil || d != want || n != size {
			b.Fatalf("Digest = %s, %d, %v; want %s", d, n, err, want)
		}
	}
}
