package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestNotice: NOTICE is the notices of the modules the release links, as
// make notice writes them.
func TestNotice(t *testing.T) {
	if err := run(io.Discard, filepath.Join("..", ".."), true); err != nil {
		t.Fatal(err)
	}
}

// TestRenderSkipsModulesWithoutNotice: a module with no NOTICE file adds
// nothing; one with a NOTICE.txt adds it under its path and version.
func TestRenderSkipsModulesWithoutNotice(t *testing.T) {
	with, without := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(with, "NOTICE.txt"), "Copyright 2014 gRPC authors.\n")
	out, n, err := render([]module{{Path: "example.com/a", Version: "v1.0.0", Dir: without}, {Path: "example.com/b", Version: "v1.2.3", Dir: with}})
	if err != nil {
		t.Fatal(err)
	}
	want := header + "\n================================================================\nexample.com/b v1.2.3\n================================================================\n\nCopyright 2014 gRPC authors.\n"
	if string(out) != want || n != 1 {
		t.Errorf("rendered %d notices:\n%s\nwant 1:\n%s", n, out, want)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
