package cli

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestCopyImageLeavesMountsOut(t *testing.T) {
	root := t.TempDir()
	for name, content := range map[string]string{
		"containerd-shim-demo-v2":    "shim",
		"etc/demo/config.toml":       "a = 1",
		"etc/hosts":                  "mounted by the kubelet",
		"proc/1/status":              "mounted by the runtime",
		"var/run/secrets/token":      "the service account's",
		"shimkit-image/left-over":    "the destination",
		"dir with space/inside.toml": "b = 2",
	} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(root, "containerd-shim-demo-v2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("etc/demo", filepath.Join(root, "config")); err != nil {
		t.Fatal(err)
	}
	mountinfo := filepath.Join(t.TempDir(), "mountinfo")
	lines := "" +
		"1 0 0:1 / " + root + " rw - overlay overlay rw\n" +
		"2 1 0:2 / " + root + "/proc rw - proc proc rw\n" +
		"3 1 0:3 /hosts " + root + "/etc/hosts rw - ext4 /dev/vda rw\n" +
		"4 1 0:4 / " + root + "/var/run/secrets rw - tmpfs tmpfs rw\n"
	if err := os.WriteFile(mountinfo, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(root, "shimkit-image")
	if err := copyImage(root, dest, mountinfo); err != nil {
		t.Fatal(err)
	}
	var got []string
	_ = filepath.WalkDir(dest, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dest, p)
			got = append(got, rel)
		}
		return nil
	})
	slices.Sort(got)
	// (left-over was in the destination before: not copied into itself.)
	want := []string{"config", "containerd-shim-demo-v2", "dir with space/inside.toml", "etc/demo/config.toml", "left-over"}
	if !slices.Equal(got, want) {
		t.Errorf("copied %q, want %q", got, want)
	}
	if fi, err := os.Stat(filepath.Join(dest, "containerd-shim-demo-v2")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("the shim's mode: %v %v", fi, err)
	}
	if target, err := os.Readlink(filepath.Join(dest, "config")); err != nil || target != "etc/demo" {
		t.Errorf("the link: %q %v", target, err)
	}
}
