package installer_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
)

// binaryNamePlan is an NVIDIA/crun-style bundle: an OCI runtime binary and
// no shim of its own; the handler runs containerd's runc shim, which starts
// containers with the bundle's runtime through the BinaryName option. The
// runtime is a copy of Debian's runc (crun 1.8 from Debian does not run
// here: it refuses hybrid cgroups and containerd 2.x's OCI 1.2 specs).
func binaryNamePlan(t *testing.T, srv *testutil.FileServer) *plan.NodePlan {
	t.Helper()
	bin, err := os.ReadFile("/usr/bin/runc")
	if err != nil {
		t.Fatal(err)
	}
	a := testutil.NewArchive(t, testutil.ArchiveFile{Name: "bin/oci-runtime", Mode: 0o755, Data: bin})
	p := plan.New(plan.ShimRef{Name: "oci-runtime", UID: "uid-ocirt"}, plan.OpInstall)
	p.Artifact = &plan.Artifact{Type: plan.SourceHTTP, URL: srv.Add("/oci-runtime.tar.gz", a.Data), Digest: "sha256:" + a.SHA256}
	p.Files = []plan.File{{Source: "bin/oci-runtime", Path: "oci-runtime", Mode: 0o755}}
	p.Handlers = []plan.Handler{{Name: "bundled-runtime", RuntimeType: "io.containerd.runc.v2",
		Options: map[string]any{"BinaryName": plan.BundleDirPlaceholder + "/oci-runtime"}}}
	return rehash(p)
}

// TestBinaryNameHandler installs the bundle on containerd 1.7, 2.2 and 2.3
// and starts a pod sandbox with the handler: its shim is containerd's runc
// shim, its container runs (the runtime reads its state back as running),
// and it is the bundle's runtime that started it: with the bundle's file
// moved away, a new pod fails naming exactly that file.
func TestBinaryNameHandler(t *testing.T) {
	for _, b := range testutil.ContainerdMatrix(t)[1:] {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			n := newProcNode(t, b)
			inst := n.installer()
			srv := testutil.StartFileServer(t)
			if _, err := inst.Install(ctx, binaryNamePlan(t, srv)); err != nil {
				t.Fatalf("install: %v\n%s", err, n.c.LogTail())
			}
			runtime := filepath.Join(n.dir, "bundles", "oci-runtime", "current", "oci-runtime")
			rt := n.c.Runtime(t)
			id, exe, err := testutil.RunSandbox(ctx, rt, "bundled-runtime", "pod-one")
			if err != nil {
				t.Fatalf("%v\n%s", err, n.c.LogTail())
			}
			if filepath.Base(exe) != "containerd-shim-runc-v2" {
				t.Errorf("sandbox shim is %s, want containerd's runc shim", exe)
			}
			out, err := exec.CommandContext(ctx, runtime, "--root", "/run/containerd/runc/k8s.io", "state", id).CombinedOutput()
			var st struct{ Status string }
			if err != nil || json.Unmarshal(out, &st) != nil || st.Status != "running" {
				t.Errorf("runtime state of %s: %v\n%s", id, err, out)
			}

			// Negative control: without the bundle's runtime no pod starts.
			if err := os.Rename(runtime, runtime+".away"); err != nil {
				t.Fatal(err)
			}
			_, _, err = testutil.RunSandbox(ctx, rt, "bundled-runtime", "pod-two")
			if err == nil || !strings.Contains(err.Error(), "oci-runtime") {
				t.Errorf("a pod started without the bundle's runtime: %v", err)
			}
			if err := os.Rename(runtime+".away", runtime); err != nil {
				t.Fatal(err)
			}
			removeSandboxes(ctx, t, rt)
			if _, err := inst.Uninstall(ctx, uninstallPlan("oci-runtime")); err != nil {
				t.Fatal(err)
			}
		})
	}
}
