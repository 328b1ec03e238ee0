package testutil

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// RequireHarness stops a test that needs real external parts when the tests
// run in -short mode (make test-unit). Outside -short a harness that cannot
// start fails the test: CI must never pass by skipping the real parts.
func RequireHarness(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs real binaries (kube-apiserver, etcd, containerd); run without -short")
	}
}

// RepoRoot returns the root of the shimkit repository: the nearest
// directory at or above the working directory (a test's is its package's)
// whose go.mod declares the module. It does not read source paths, which
// make test's -trimpath removes from the binaries; outside the repository
// it panics, as no test can run there.
func RepoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		panic(fmt.Sprintf("testutil: the working directory: %v", err))
	}
	for d := dir; ; d = filepath.Dir(d) {
		if data, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && bytes.HasPrefix(data, []byte("module github.com/shimkit/shimkit\n")) {
			return d
		}
		if filepath.Dir(d) == d {
			panic(fmt.Sprintf("testutil: %s is not inside the shimkit repository (no go.mod of github.com/shimkit/shimkit above it)", dir))
		}
	}
}

// Version returns a pinned version from hack/versions.env, the one place the
// versions of the external test binaries are written down.
func Version(key string) (string, error) {
	path := filepath.Join(RepoRoot(), "hack", "versions.env")
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return "", fmt.Errorf("%s: malformed line %q", path, line)
		}
		if k == key {
			return v, nil
		}
	}
	return "", fmt.Errorf("%s has no %s", path, key)
}

// CacheDir is where hack/bins.sh caches built binaries: $SHIMKIT_CACHE, or
// shimkit under the user cache directory.
func CacheDir() string {
	if d := os.Getenv("SHIMKIT_CACHE"); d != "" {
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		d = os.TempDir()
	}
	return filepath.Join(d, "shimkit")
}

// BinDir returns the cache directory of one built component, such as
// BinDir("kube", "KUBE_VERSION"), and fails the test when any of the named
// binaries is missing from it.
func BinDir(t testing.TB, component, versionKey string, names ...string) string {
	t.Helper()
	v, err := Version(versionKey)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(CacheDir(), "bin", component+"-"+v)
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Fatalf("%s %s: %v (build it with `make bins`)", component, v, err)
		}
	}
	return dir
}
