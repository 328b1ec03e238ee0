package installer_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/shimkit/shimkit/crioconfig"
	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/plan"
)

// Bake an OCI runtime into a CRI-O image's root filesystem: the plan names
// the runtime, the handler goes to a drop-in of shimkit's own in
// /etc/crio/crio.conf.d (an oci handler of the bundle's binary), and
// nothing is restarted offline.
func ExampleRuntime_crio() {
	root, _ := os.MkdirTemp("", "image-root")
	defer os.RemoveAll(root)
	_ = os.MkdirAll(filepath.Join(root, "etc/crio/crio.conf.d"), 0o755)
	crun := filepath.Join(root, "crun") // an artifact copied in beforehand
	_ = os.WriteFile(crun, []byte("\x7fELF..."), 0o644)

	p := plan.New(plan.ShimRef{Name: "crun-wasm"}, plan.OpInstall)
	p.Runtime = plan.RuntimeCRIO
	p.SpecHash = "v1"
	p.Artifact = &plan.Artifact{Type: plan.SourceFile, Path: crun}
	p.Files = []plan.File{{Source: "crun", Path: "crun", Mode: 0o755}}
	p.Handlers = []plan.Handler{{Name: "crun-wasm", RuntimeType: "io.containerd.runc.v2",
		Options:  map[string]any{"BinaryName": "$(BUNDLE_DIR)/crun"},
		Settings: map[string]any{"allowed_annotations": []any{"module.wasm.image/variant"}}}}

	inst := &installer.Installer{HostRoot: root, Offline: true, LinkDir: "-"}
	res, err := inst.Install(context.Background(), p)
	if err != nil {
		fmt.Println(err)
		return
	}
	dropIn, _ := os.ReadFile(filepath.Join(root, "etc/crio/crio.conf.d", crioconfig.DropInName("crun-wasm")))
	fmt.Println(res.Changed, res.Restarted)
	fmt.Println(len(dropIn) > 0)
	// Output:
	// true false
	// true
}
