package installer_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/plan"
)

// Bake a shim into an image's root filesystem from a plan: offline, no
// restart. The plan is the same document the operator hands its Jobs.
func ExampleInstaller_Install_offline() {
	root, _ := os.MkdirTemp("", "image-root")
	defer os.RemoveAll(root)
	_ = os.MkdirAll(filepath.Join(root, "etc/containerd"), 0o755)
	_ = os.WriteFile(filepath.Join(root, "etc/containerd/config.toml"), []byte("version = 2\n"), 0o644)
	shim := filepath.Join(root, "containerd-shim-wasm-v2") // an artifact copied in beforehand
	_ = os.WriteFile(shim, []byte("\x7fELF..."), 0o644)

	p := plan.New(plan.ShimRef{Name: "wasm"}, plan.OpInstall)
	p.SpecHash = "v1"
	p.Artifact = &plan.Artifact{Type: plan.SourceFile, Path: shim}
	p.Files = []plan.File{{Source: "containerd-shim-*", Path: "containerd-shim-wasm-v2", Mode: 0o755}}
	p.Handlers = []plan.Handler{{Name: "wasm", RuntimeType: "io.containerd.wasm.v2", RuntimePath: "$(BUNDLE_DIR)/containerd-shim-wasm-v2"}}

	inst := &installer.Installer{HostRoot: root, Offline: true, LinkDir: "-"}
	res, err := inst.Install(context.Background(), p)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Changed, res.Restarted)
	// Output: true false
}

// Two Shims in one operation: on a live node containerd restarts once for
// both (here offline, into an image's root filesystem: no restart at all).
func ExampleInstaller_InstallAll() {
	root, _ := os.MkdirTemp("", "image-root")
	defer os.RemoveAll(root)
	_ = os.MkdirAll(filepath.Join(root, "etc/containerd"), 0o755)
	_ = os.WriteFile(filepath.Join(root, "etc/containerd/config.toml"), []byte("version = 2\n"), 0o644)

	var plans []*plan.NodePlan
	for _, name := range []string{"wasm", "spin"} {
		shim := filepath.Join(root, "containerd-shim-"+name+"-v2") // artifacts copied in beforehand
		_ = os.WriteFile(shim, []byte("\x7fELF..."), 0o644)
		p := plan.New(plan.ShimRef{Name: name}, plan.OpInstall)
		p.SpecHash = "v1"
		p.Artifact = &plan.Artifact{Type: plan.SourceFile, Path: shim}
		p.Files = []plan.File{{Source: "containerd-shim-*", Path: "containerd-shim-" + name + "-v2", Mode: 0o755}}
		p.Handlers = []plan.Handler{{Name: name, RuntimeType: "io.containerd." + name + ".v2", RuntimePath: "$(BUNDLE_DIR)/containerd-shim-" + name + "-v2"}}
		plans = append(plans, p)
	}

	inst := &installer.Installer{HostRoot: root, Offline: true, LinkDir: "-"}
	results, err := inst.InstallAll(context.Background(), plans)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range results {
		fmt.Println(r.Shim, r.Changed, r.Restarted)
	}
	// Output:
	// wasm true false
	// spin true false
}

// Verify a node against the Shim's current spec: the verify plan is the
// install plan under another operation. Verify changes nothing; the same
// install plan repairs what it finds.
func ExampleInstaller_Verify() {
	root, _ := os.MkdirTemp("", "node-root")
	defer os.RemoveAll(root)
	_ = os.MkdirAll(filepath.Join(root, "etc/containerd"), 0o755)
	_ = os.WriteFile(filepath.Join(root, "etc/containerd/config.toml"), []byte("version = 2\n"), 0o644)
	shim := filepath.Join(root, "containerd-shim-wasm-v2")
	_ = os.WriteFile(shim, []byte("\x7fELF..."), 0o644)

	p := plan.New(plan.ShimRef{Name: "wasm"}, plan.OpInstall)
	p.SpecHash = "v1"
	p.Artifact = &plan.Artifact{Type: plan.SourceFile, Path: shim}
	p.Files = []plan.File{{Source: "containerd-shim-*", Path: "containerd-shim-wasm-v2", Mode: 0o755}}
	p.Handlers = []plan.Handler{{Name: "wasm", RuntimeType: "io.containerd.wasm.v2", RuntimePath: "$(BUNDLE_DIR)/containerd-shim-wasm-v2"}}
	verify := *p
	verify.Operation = plan.OpVerify

	ctx := context.Background()
	inst := &installer.Installer{HostRoot: root, Offline: true, LinkDir: "-"}
	if _, err := inst.Install(ctx, p); err != nil {
		fmt.Println(err)
		return
	}
	res, _ := inst.Verify(ctx, &verify)
	fmt.Println("drift:", len(res.Drift))

	// Config management puts its own config back.
	_ = os.WriteFile(filepath.Join(root, "etc/containerd/config.toml"), []byte("version = 2\n"), 0o644)
	res, err := inst.Verify(ctx, &verify)
	r := installer.Report(&verify, res, err) // what shimkit-installer verify writes
	fmt.Println(r.Operation, r.Outcome, r.Drift)

	res, _ = inst.Install(ctx, p)
	fmt.Println("repaired:", res.Drift)
	res, _ = inst.Verify(ctx, &verify)
	fmt.Println("drift:", len(res.Drift))
	// Output:
	// drift: 0
	// verify Succeeded [handler wasm is not in containerd's config]
	// repaired: [handler wasm is not in containerd's config]
	// drift: 0
}
