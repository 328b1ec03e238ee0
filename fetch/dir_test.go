package fetch_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/shimkit/shimkit/fetch"
)

// tree writes files (name → content; content "->x" makes a symlink to x,
// "|fifo" a named pipe) under a new directory.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case len(content) > 2 && content[:2] == "->":
			err = os.Symlink(content[2:], p)
		case content == "|fifo":
			err = syscall.Mkfifo(p, 0o644)
		default:
			err = os.WriteFile(p, []byte(content), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestDirFetcher(t *testing.T) {
	const dgst = "sha256:9b704860a4452070113674d7c33e19e2b75b3c55f299aea49af65586d5f7488a"
	for _, tc := range []struct {
		name      string
		files     map[string]string
		limits    fetch.Limits
		wantFiles []string
		wantExec  []string
		wantErr   error
	}{
		{
			name:      "a bundle with a directory and a link inside it",
			files:     map[string]string{"bin/containerd-shim-demo-v2": "shim", "etc/demo.toml": "a = 1", "current": "->bin"},
			wantFiles: []string{"bin/containerd-shim-demo-v2", "current", "etc/demo.toml"},
			wantExec:  []string{"bin/containerd-shim-demo-v2"},
		},
		{name: "a link out of the tree", files: map[string]string{"containerd-shim-demo-v2": "shim", "passwd": "->../../etc/passwd"}, wantErr: fetch.ErrUnsafeArchive},
		{name: "an absolute link", files: map[string]string{"containerd-shim-demo-v2": "shim", "passwd": "->/etc/passwd"}, wantErr: fetch.ErrUnsafeArchive},
		{name: "a named pipe", files: map[string]string{"containerd-shim-demo-v2": "shim", "pipe": "|fifo"}, wantErr: fetch.ErrUnsafeArchive},
		{name: "no shim", files: map[string]string{"README": "no binary"}, wantErr: fetch.ErrNoShim},
		{name: "too many entries", files: map[string]string{"containerd-shim-demo-v2": "shim", "a": "1", "b": "2"}, limits: fetch.Limits{MaxEntries: 2}, wantErr: fetch.ErrLimit},
		{name: "a file too large", files: map[string]string{"containerd-shim-demo-v2": "a shim of 23 bytes....."}, limits: fetch.Limits{MaxFile: 8}, wantErr: fetch.ErrLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "dest")
			f := &fetch.DirFetcher{Path: tree(t, tc.files), Digest: dgst, Options: fetch.Options{Limits: tc.limits}}
			res, err := f.Fetch(context.Background(), fetch.HostPlatform(), dest)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				if _, err := os.Stat(dest); !os.IsNotExist(err) {
					t.Errorf("dest left after the error: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Digest != dgst || !slices.Equal(res.Files, tc.wantFiles) || !slices.Equal(res.Executables, tc.wantExec) {
				t.Errorf("result %+v, want files %v, executables %v", res, tc.wantFiles, tc.wantExec)
			}
			if fi, err := os.Stat(filepath.Join(dest, "bin/containerd-shim-demo-v2")); err != nil || fi.Mode().Perm() != 0o755 {
				t.Errorf("the shim: %v %v", fi, err)
			}
			if fi, err := os.Stat(filepath.Join(dest, "etc/demo.toml")); err != nil || fi.Mode().Perm() != 0o644 {
				t.Errorf("the config: %v %v", fi, err)
			}
		})
	}
}

func TestDirFetcherMissing(t *testing.T) {
	f := &fetch.DirFetcher{Path: filepath.Join(t.TempDir(), "absent")}
	if _, err := f.Fetch(context.Background(), fetch.HostPlatform(), t.TempDir()); !errors.Is(err, fetch.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
}
