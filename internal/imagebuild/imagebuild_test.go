package imagebuild_test

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shimkit/shimkit/internal/imagebuild"
	"github.com/shimkit/shimkit/internal/testutil"
)

// TestInstallerImageRunsInContainerd builds the installer image without
// Docker, imports it into a real containerd and runs it there.
func TestInstallerImageRunsInContainerd(t *testing.T) {
	b := testutil.ContainerdMatrix(t)[2]
	dir := t.TempDir()
	bin := testutil.GoBuild(t, "./cmd/shimkit-installer", filepath.Join(dir, "shimkit-installer"))
	tarPath := filepath.Join(dir, "installer.tar")
	ref := "shimkit.test/shimkit-installer:test"
	if err := imagebuild.Write(imagebuild.Image{Ref: ref, Binary: bin, Name: "shimkit-installer"}, tarPath); err != nil {
		t.Fatal(err)
	}
	c := testutil.StartContainerd(t, b, b.MinimalConfig())
	ctr := func(args ...string) (string, error) {
		out, err := exec.Command(b.Binary("ctr"), append([]string{"--address", c.Socket}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := ctr("images", "import", tarPath); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	// No arguments: the installer prints its usage and exits 2.
	out, err := ctr("run", "--rm", ref, "imagebuild-test")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(out, "usage: shimkit-installer") {
		t.Fatalf("run: %v\n%s", err, out)
	}
	// A command that works: status of a root with no shim installed.
	out, err = ctr("run", "--rm", ref, "imagebuild-test2", "/shimkit-installer", "status", "--host-root", "/")
	if err != nil || !strings.Contains(out, "null") {
		t.Errorf("status in the container: %v\n%s", err, out)
	}
}
