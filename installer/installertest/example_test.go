package installertest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/installertest"
	"github.com/shimkit/shimkit/installer/plan"
)

// Drive the steps with the in-memory runtime: one restart, the handler
// served.
func ExampleFakeRuntime() {
	root, _ := os.MkdirTemp("", "node-root")
	defer os.RemoveAll(root)
	shim := filepath.Join(root, "containerd-shim-wasm-v2") // an artifact copied in beforehand
	_ = os.WriteFile(shim, []byte("\x7fELF..."), 0o644)

	p := plan.New(plan.ShimRef{Name: "wasm"}, plan.OpInstall)
	p.SpecHash = "v1"
	p.Artifact = &plan.Artifact{Type: plan.SourceFile, Path: shim}
	p.Files = []plan.File{{Source: "containerd-shim-*", Path: "containerd-shim-wasm-v2", Mode: 0o755}}
	p.Handlers = []plan.Handler{{Name: "wasm", RuntimeType: "io.containerd.wasm.v2", RuntimePath: "$(BUNDLE_DIR)/containerd-shim-wasm-v2"}}

	rt := &installertest.FakeRuntime{}
	inst := &installer.Installer{HostRoot: root, LinkDir: "-", Runtime: rt}
	if _, err := inst.Install(context.Background(), p); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rt.Handlers(), rt.Restarts())
	// Output: [wasm] 1
}
