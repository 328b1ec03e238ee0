package testutil

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildLimit bounds a go build of a test: the first of a cold run
// compiles the operator's dependencies (minutes on two cores; make test's
// prerequisites compile them first).
const buildLimit = 10 * time.Minute

// GoBuild builds the repository's package pkg ("./cmd/shimkit-installer")
// into the file out with the flags, statically (CGO_ENABLED=0, as make
// test builds everything, so the compiled packages are shared), and
// returns out. The build is the test's (Command) and bounded.
//
// The linked binary is kept in CacheDir()/gobuild, one per package, flags
// and platform, and out gets a copy: the go command links it again only
// when its build ID says a source, a flag or the toolchain changed, so a
// test that builds the operator the run before built takes about a second,
// not a link's ten seconds of CPU. A lock per binary lets the test
// binaries of several packages build the same one at once.
func GoBuild(t testing.TB, pkg, out string, flags ...string) string {
	t.Helper()
	return goBuild(t, "", pkg, out, flags)
}

// GoBuildArch is GoBuild for another architecture of linux (GOARCH=arch).
func GoBuildArch(t testing.TB, arch, pkg, out string, flags ...string) string {
	t.Helper()
	return goBuild(t, arch, pkg, out, flags)
}

func goBuild(t testing.TB, arch, pkg, out string, flags []string) string {
	t.Helper()
	cached, unlock, err := lockBuild(arch, pkg, filepath.Base(out), flags)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	cmd := Command(t, "go", append(append([]string{"build"}, flags...), "-o", cached, pkg)...)
	cmd.Dir = RepoRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if arch != "" {
		cmd.Env = append(cmd.Env, "GOARCH="+arch)
	}
	if output, err := RunBounded(cmd, "go build "+pkg, buildLimit); err != nil {
		t.Fatalf("%v\n%s", err, output)
	}
	if err := copyExecutable(cached, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// lockBuild returns where the binary of pkg built with flags for arch is
// kept, locked for this process until unlock is called.
func lockBuild(arch, pkg, name string, flags []string) (string, func(), error) {
	key := sha256.Sum256([]byte(strings.Join(append([]string{arch, pkg, os.Getenv("GOFLAGS")}, flags...), "\x00")))
	dir := filepath.Join(CacheDir(), "gobuild", hex.EncodeToString(key[:8]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, fmt.Errorf("go build cache: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", nil, fmt.Errorf("go build cache: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return "", nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return filepath.Join(dir, name), func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

// copyExecutable copies the binary src to dst (replacing it, making its
// directory as go build -o does), mode 0755.
func copyExecutable(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	_ = os.Remove(dst) // a running copy stays whole: a new inode
	o, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(o, in); err != nil {
		o.Close()
		return fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	return o.Close()
}
