package installer_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
)

// TestInstallFromImageFiles installs a shim from the files of an image as
// the kubelet puts them into the installer's pod (an image volume, or the
// copy where the node has none): a directory tree, pinned by the image's
// digest, installed on a real containerd whose sandbox then runs it.
func TestInstallFromImageFiles(t *testing.T) {
	b := testutil.ContainerdMatrix(t)[2]
	ctx := context.Background()
	n := newProcNode(t, b)
	runc, err := os.ReadFile(b.Binary("containerd-shim-runc-v2"))
	if err != nil {
		t.Fatal(err)
	}
	image := t.TempDir() // the image's root filesystem, as mounted
	if err := os.MkdirAll(filepath.Join(image, "usr/local/bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(image, "usr/local/bin/containerd-shim-demo-v2"), runc, 0o755); err != nil {
		t.Fatal(err)
	}
	d := "sha256:" + testutil.SHA256Hex(runc)
	p := shimPlan("demo", &plan.Artifact{Type: plan.SourceImage, Reference: "shims.example.invalid/demo@" + d, Digest: d, Path: image})
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	res, err := n.installer().Install(ctx, p)
	if err != nil {
		t.Fatalf("install: %v\n%s", err, n.c.LogTail())
	}
	if !res.Changed || !res.Restarted || res.Digest != d {
		t.Errorf("install: %+v, want a change, a restart and the image's digest %s", res, d)
	}
	bin := installedBinary(t, filepath.Join(n.dir, "bundles"), "demo")
	_, exe, err := testutil.RunSandbox(ctx, n.c.Runtime(t), "demo", "image")
	if err != nil {
		t.Fatalf("%v\n%s", err, n.c.LogTail())
	}
	if exe != bin {
		t.Errorf("the sandbox runs %s, want the installed %s", exe, bin)
	}
}
