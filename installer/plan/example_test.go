package plan_test

import (
	"fmt"

	"github.com/shimkit/shimkit/installer/plan"
)

// A plan for a gVisor bundle, as the operator builds it and an image
// builder could write it by hand, and the result an installer reports.
func Example() {
	p := plan.New(plan.ShimRef{Name: "gvisor", UID: "uid-1"}, plan.OpInstall)
	p.SpecHash = "3f1e0b6a9c2d4e5f"
	p.Artifact = &plan.Artifact{Type: plan.SourceFile, Path: "/srv/gvisor.tar.gz"}
	p.Files = []plan.File{
		{Source: "runsc", Path: "runsc", Mode: 0o755},
		{Source: "containerd-shim-runsc-v1", Path: "containerd-shim-runsc-v1", Mode: 0o755},
		{Source: "runsc.toml", Path: "runsc.toml", Mode: 0o644, Substitute: true},
	}
	p.Handlers = []plan.Handler{{
		Name: "runsc", RuntimeType: "io.containerd.runsc.v1",
		RuntimePath: "$(BUNDLE_DIR)/containerd-shim-runsc-v1",
		Options:     map[string]any{"TypeUrl": "io.containerd.runsc.v1.options", "ConfigPath": "$(BUNDLE_DIR)/runsc.toml"},
	}}
	if _, err := plan.Encode(p); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(plan.ResolveBundleDir(p.Handlers[0].RuntimePath, "/opt/shimkit/gvisor/current"))

	r := plan.NewResult(p)
	r.Outcome, r.Reason, r.Message = plan.RolledBack, plan.ReasonRestartFailed, "containerd not ready after 60s"
	data, _ := plan.EncodeResult(r, plan.MaxTerminationMessage)
	back, _ := plan.DecodeResult(data)
	fmt.Println(back.Outcome, back.Reason)
	// Output:
	// /opt/shimkit/gvisor/current/containerd-shim-runsc-v1
	// RolledBack RestartFailed
}
