package fetch_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
