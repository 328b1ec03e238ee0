package installer_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
)

// shimPlan is the plan the operator builds for a one-binary Shim named
// after its handler: the artifact's containerd-shim-* binary, placed as
// containerd-shim-<name>-v2, registered as handler name.
func shimPlan(name string, a *plan.Artifact) *plan.NodePlan {
	p := plan.New(plan.ShimRef{Name: name, UID: "uid-" + name}, plan.OpInstall)
	bin := "containerd-shim-" + name + "-v2"
	p.Artifact = a
	p.Files = []plan.File{{Source: "containerd-shim-*", Path: bin, Mode: 0o755}}
	p.Handlers = []plan.Handler{{Name: name, RuntimeType: "io.containerd." + name + ".v2", RuntimePath: plan.BundleDirPlaceholder + "/" + bin}}
	p.SpecHash = specHash(p)
	return p
}

// specHash stands in for the operator's: anything that changes the plan
// changes it.
func specHash(p *plan.NodePlan) string {
	c := *p
	c.SpecHash = "-"
	data, err := plan.Encode(&c)
	if err != nil {
		panic(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:16]
}

// httpPlan serves the archive at path and returns the plan of Shim "demo"
// that installs it.
func httpPlan(srv *testutil.FileServer, path string, a testutil.ShimArchive) *plan.NodePlan {
	return namedHTTPPlan("demo", srv, path, a)
}

func namedHTTPPlan(name string, srv *testutil.FileServer, path string, a testutil.ShimArchive) *plan.NodePlan {
	url := srv.Add(path, a.Data)
	return shimPlan(name, &plan.Artifact{Type: plan.SourceHTTP, URL: url, Digest: "sha256:" + a.SHA256})
}

func rehash(p *plan.NodePlan) *plan.NodePlan {
	p.SpecHash = specHash(p)
	return p
}

func uninstallPlan(name string) *plan.NodePlan {
	return plan.New(plan.ShimRef{Name: name, UID: "uid-" + name}, plan.OpUninstall)
}

// installedBinary is the file the Shim's current bundle serves as its
// shim binary (what a sandbox's shim process runs).
func installedBinary(t *testing.T, bundleRoot, name string) string {
	t.Helper()
	p, err := filepath.EvalSymlinks(filepath.Join(bundleRoot, name, "current", "containerd-shim-"+name+"-v2"))
	if err != nil {
		t.Fatalf("installed binary of %s: %v", name, err)
	}
	return p
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
