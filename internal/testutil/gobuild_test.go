package testutil_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/shimkit/shimkit/internal/testutil"
)

// TestGoBuildLinksOnce builds a binary twice: the second build reuses the
// first's link (the kept binary is the same file) and both copies are the
// same; other flags make another binary.
func TestGoBuildLinksOnce(t *testing.T) {
	t.Setenv("SHIMKIT_CACHE", t.TempDir())
	dir := t.TempDir()
	first := testutil.GoBuild(t, "./internal/testutil/pause", filepath.Join(dir, "a", "pause"))
	kept, err := filepath.Glob(filepath.Join(os.Getenv("SHIMKIT_CACHE"), "gobuild", "*", "pause"))
	if err != nil || len(kept) != 1 {
		t.Fatalf("kept binaries: %v %v, want one", kept, err)
	}
	before, err := os.Stat(kept[0])
	if err != nil {
		t.Fatal(err)
	}
	second := testutil.GoBuild(t, "./internal/testutil/pause", filepath.Join(dir, "b", "pause"))
	after, err := os.Stat(kept[0])
	if err != nil {
		t.Fatal(err)
	}
	// The go command touches a binary it finds up to date; a link writes
	// a new file.
	if !os.SameFile(before, after) {
		t.Errorf("the second build linked %s again", kept[0])
	}
	a, _ := os.ReadFile(first)
	b, _ := os.ReadFile(second)
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Errorf("the two copies differ (%d and %d bytes)", len(a), len(b))
	}
	if fi, err := os.Stat(second); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Errorf("the copy is not executable: %v %v", fi, err)
	}

	testutil.GoBuild(t, "./internal/testutil/pause", filepath.Join(dir, "c", "pause"), "-ldflags=-s -w")
	if kept, _ := filepath.Glob(filepath.Join(os.Getenv("SHIMKIT_CACHE"), "gobuild", "*", "pause")); len(kept) != 2 {
		t.Errorf("kept binaries after a build with other flags: %v, want two", kept)
	}
}
