package testutil

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// ShimArchive is a shim packed the way releases ship them.
type ShimArchive struct {
	Name   string // the shim name: the binary is containerd-shim-<Name>-v2
	Data   []byte // the .tar.gz bytes
	SHA256 string // hex sha256 of Data
	Binary []byte // the shim binary inside
}

// BinaryName is the file name of the shim binary in the archive.
func (a ShimArchive) BinaryName() string { return "containerd-shim-" + a.Name + "-v2" }

// NewShimArchive packs a real shim, a copy of the runc shim at runcShim named
// containerd-shim-<name>-v2, into a .tar.gz. extra adds further files (for
// example a README or a version file that makes two archives differ).
func NewShimArchive(t testing.TB, name, runcShim string, extra map[string]string) ShimArchive {
	t.Helper()
	bin, err := os.ReadFile(runcShim)
	if err != nil {
		t.Fatalf("read shim %s: %v", runcShim, err)
	}
	a := ShimArchive{Name: name, Binary: bin}
	files := []ArchiveFile{{Name: a.BinaryName(), Mode: 0o755, Data: bin}}
	for _, n := range slices.Sorted(maps.Keys(extra)) {
		files = append(files, ArchiveFile{Name: n, Mode: 0o644, Data: []byte(extra[n])})
	}
	packed := NewArchive(t, files...)
	a.Data, a.SHA256 = packed.Data, packed.SHA256
	return a
}

// SHA256Hex returns the hex sha256 of data.
func SHA256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// FileServer is a local HTTP server for shim artifacts, with faults that
// tests can inject per path.
type FileServer struct {
	*httptest.Server

	mu       sync.Mutex
	files    map[string][]byte
	faults   map[string][]Fault
	byPath   map[string]int64
	requests atomic.Int64
}

// Fault changes how the server answers one request for a path.
type Fault struct {
	Status   int           // answer with this status and no body
	Delay    time.Duration // wait this long before answering
	Truncate int           // send only this many bytes of the body, then close the connection
}

// StartFileServer starts a FileServer on loopback and closes it in
// t.Cleanup.
func StartFileServer(t testing.TB) *FileServer {
	t.Helper()
	return StartFileServerOn(t, "127.0.0.1")
}

// StartFileServerOn is StartFileServer listening on host (an address of
// this machine), for clients in other network namespaces.
func StartFileServerOn(t testing.TB, host string) *FileServer {
	t.Helper()
	s := &FileServer{files: map[string][]byte{}, faults: map[string][]Fault{}, byPath: map[string]int64{}}
	s.Server = startServerOn(t, host, http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// startServerOn starts an httptest server listening on host.
func startServerOn(t testing.TB, host string, h http.Handler) *httptest.Server {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("listen on %s: %v", host, err)
	}
	s := httptest.NewUnstartedServer(h)
	_ = s.Listener.Close()
	s.Listener = l
	s.Start()
	return s
}

// Add serves data at path and returns its URL.
func (s *FileServer) Add(path string, data []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[path] = data
	return s.URL + path
}

// Inject queues faults for the next requests of path, one per request.
func (s *FileServer) Inject(path string, faults ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[path] = append(s.faults[path], faults...)
}

// Requests returns how many requests the server has answered.
func (s *FileServer) Requests() int64 { return s.requests.Load() }

// RequestsFor returns how many requests of path (a URL's path, without
// the query) the server has answered, whatever the answer was: for an
// artifact's path, how often it was downloaded or asked for.
func (s *FileServer) RequestsFor(path string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byPath[path]
}

func (s *FileServer) serve(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	s.mu.Lock()
	s.byPath[r.URL.Path]++
	data, ok := s.files[r.URL.Path]
	var f Fault
	if q := s.faults[r.URL.Path]; len(q) > 0 {
		f, s.faults[r.URL.Path] = q[0], q[1:]
	}
	s.mu.Unlock()
	if f.Delay > 0 {
		select {
		case <-time.After(f.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if f.Status != 0 {
		http.Error(w, http.StatusText(f.Status), f.Status)
		return
	}
	if !ok {
		http.NotFound(w, r)
		return
	}
	if f.Truncate > 0 && f.Truncate < len(data) {
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(data[:f.Truncate])
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
			}
		}
		return
	}
	http.ServeContent(w, r, r.URL.Path, time.Time{}, bytes.NewReader(data))
}
