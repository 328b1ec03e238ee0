package fetch

import (
	"context"
	"errors"
	"fmt"
	"path"
	"runtime"
	"strings"

	"github.com/opencontainers/go-digest"
)

// Fetcher fetches a shim artifact for a platform into a destination
// directory, verifying it before anything is written there.
type Fetcher interface {
	Fetch(ctx context.Context, p Platform, dest string) (*Result, error)
}

var (
	_ Fetcher = (*HTTPFetcher)(nil)
	_ Fetcher = (*OCIFetcher)(nil)
	_ Fetcher = (*LocalFetcher)(nil)
)

// Result says what a Fetch produced.
type Result struct {
	// Digest is the sha256 of the artifact as downloaded (the archive or
	// bare binary; for OCI the layer).
	Digest digest.Digest
	// Size is the artifact's size in bytes.
	Size int64
	// Files lists what was extracted, relative to the destination, sorted.
	Files []string
	// Executables lists the files made executable: regular files whose
	// names match Options.Executables.
	Executables []string
	// Cached is true when the artifact came from the cache, not the network.
	Cached bool
}

// Sentinel errors, checked with errors.Is.
var (
	ErrNotFound       = errors.New("artifact not found")
	ErrDigestMismatch = errors.New("digest mismatch")
	ErrTooLarge       = errors.New("artifact larger than the download limit")
	ErrTruncated      = errors.New("artifact truncated")
	ErrUnauthorized   = errors.New("registry refused the credentials")
	ErrPlatform       = errors.New("no artifact for the platform")
	ErrUnsafeArchive  = errors.New("unsafe archive entry")
	ErrLimit          = errors.New("archive exceeds extraction limits")
	ErrNoShim         = errors.New("artifact holds no shim binary")
	ErrExists         = errors.New("destination already holds the file")
	// ErrInsecure: a redirect from https to http, or plain HTTP to a
	// registry that is neither loopback nor cluster-local (LocalRegistry)
	// without Insecure.
	ErrInsecure = errors.New("insecure transport")
	// ErrTooManyRedirects: a request was redirected more than 10 times.
	ErrTooManyRedirects = errors.New("too many redirects")
)

// Platform is an OS and architecture, such as linux/amd64.
type Platform struct {
	OS           string
	Architecture string
}

func (p Platform) String() string { return p.OS + "/" + p.Architecture }

// IsZero reports whether p is unset (matches any platform).
func (p Platform) IsZero() bool { return p.OS == "" && p.Architecture == "" }

// ParsePlatform reads os/arch. Architectures are amd64 and arm64, with the
// kernel's names x86_64 and aarch64 accepted as aliases.
func ParsePlatform(s string) (Platform, error) {
	osName, arch, ok := strings.Cut(s, "/")
	if !ok || osName != "linux" {
		return Platform{}, fmt.Errorf("%w: %q (want linux/amd64 or linux/arm64)", ErrPlatform, s)
	}
	a, err := normalizeArch(arch)
	if err != nil {
		return Platform{}, err
	}
	return Platform{OS: osName, Architecture: a}, nil
}

func normalizeArch(a string) (string, error) {
	switch strings.ToLower(a) {
	case "amd64", "x86_64", "x86-64":
		return "amd64", nil
	case "arm64", "aarch64":
		return "arm64", nil
	}
	return "", fmt.Errorf("%w: architecture %q (want amd64/x86_64 or arm64/aarch64)", ErrPlatform, a)
}

// HostPlatform is the platform this process runs on, the node's.
func HostPlatform() Platform { return Platform{OS: runtime.GOOS, Architecture: runtime.GOARCH} }

// matches reports whether an artifact built for q serves p.
func (p Platform) matches(q Platform) bool {
	if q.IsZero() {
		return true
	}
	qa, err := normalizeArch(q.Architecture)
	if err != nil {
		return false
	}
	pa, _ := normalizeArch(p.Architecture)
	return q.OS == p.OS && qa == pa
}

// Limits bound what a fetch may download and extract, so that a hostile
// or broken artifact cannot fill a node's disk.
type Limits struct {
	MaxDownload int64 // bytes of the artifact; default 512 MiB
	MaxTotal    int64 // bytes extracted in all; default 1 GiB
	MaxFile     int64 // bytes of one extracted file; default 512 MiB
	MaxEntries  int   // archive entries; default 1,000
}

func (l Limits) withDefaults() Limits {
	if l.MaxDownload <= 0 {
		l.MaxDownload = 512 << 20
	}
	if l.MaxTotal <= 0 {
		l.MaxTotal = 1 << 30
	}
	if l.MaxFile <= 0 {
		l.MaxFile = 512 << 20
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = 1000
	}
	return l
}

// DefaultExecutables matches containerd shim binaries.
const DefaultExecutables = "containerd-shim-*"

// Options are shared by every Fetcher.
type Options struct {
	// Cache keeps verified artifacts by digest; nil downloads every time.
	Cache *Cache
	// Limits bound the download and the extraction.
	Limits Limits
	// Executables is a glob (path.Match) of file names to make executable;
	// default DefaultExecutables. Nothing else gets an executable bit.
	Executables string
	// BinaryName names a bare (not archived) binary in the destination;
	// default: the last element of the URL or the layer's title.
	BinaryName string
	// Progress, when set, is called as bytes arrive; total is -1 when
	// unknown.
	Progress func(done, total int64)
}

func (o Options) executables() string {
	if o.Executables == "" {
		return DefaultExecutables
	}
	return o.Executables
}

func (o Options) isExecutable(name string) bool {
	ok, err := path.Match(o.executables(), path.Base(name))
	return err == nil && ok
}
