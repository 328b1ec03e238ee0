package testutil

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BootImage is what a node image carries to install its Shims at boot:
// shimkit-installer (/usr/local/bin), the plan document (a NodePlan or a
// NodePlanList, at /etc/shimkit/boot/plan.json) and the units
// `shimkit-installer boot-units --preset preset` writes, as NodeOptions'
// (or JoinOptions') Files and Executables.
func BootImage(t testing.TB, plan []byte, preset string) (files, exes map[string][]byte) {
	t.Helper()
	bin := InstallerBinary(t)
	image := t.TempDir()
	if out, err := exec.Command(bin, "boot-units", "--root", image, "--preset", preset).CombinedOutput(); err != nil {
		t.Fatalf("boot-units: %v\n%s", err, out)
	}
	files = map[string][]byte{"/etc/shimkit/boot/plan.json": plan}
	err := filepath.WalkDir(image, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(image, path)
		if err != nil {
			return err
		}
		files["/"+rel], err = os.ReadFile(path)
		return err
	})
	if err != nil || len(files) < 3 {
		t.Fatalf("boot-units wrote %d files (%v), want the unit and a drop-in at least", len(files)-1, err)
	}
	exe, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	return files, map[string][]byte{"/usr/local/bin/shimkit-installer": exe}
}
