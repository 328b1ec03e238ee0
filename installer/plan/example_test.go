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

// Two Shims' install plans for one node, carried out by one installer run
// with one containerd restart, and the results it reports: the plan that
// failed has the real reason, the other was rolled back with it.
func ExampleNewList() {
	spin := plan.New(plan.ShimRef{Name: "spin", UID: "uid-1"}, plan.OpInstall)
	spin.Node, spin.SpecHash = "n1", "5d2c"
	spin.Artifact = &plan.Artifact{Type: plan.SourceFile, Path: "/srv/spin.tar.gz"}
	spin.Files = []plan.File{{Source: "containerd-shim-spin-v2", Path: "containerd-shim-spin-v2", Mode: 0o755}}
	spin.Handlers = []plan.Handler{{Name: "spin", RuntimeType: "io.containerd.spin.v2", RuntimePath: "$(BUNDLE_DIR)/containerd-shim-spin-v2"}}
	gvisor := plan.New(plan.ShimRef{Name: "gvisor", UID: "uid-2"}, plan.OpInstall)
	gvisor.Node, gvisor.SpecHash = "n1", "3f1e"
	gvisor.Artifact = &plan.Artifact{Type: plan.SourceFile, Path: "/srv/gvisor.tar.gz"}
	gvisor.Files = []plan.File{{Source: "containerd-shim-runsc-v1", Path: "containerd-shim-runsc-v1", Mode: 0o755}}
	gvisor.Handlers = []plan.Handler{{Name: "runsc", RuntimeType: "io.containerd.runsc.v1", RuntimePath: "$(BUNDLE_DIR)/containerd-shim-runsc-v1"}}

	data, err := plan.EncodeList(plan.NewList(spin, gvisor))
	if err != nil {
		fmt.Println(err)
		return
	}
	plans, _ := plan.DecodePlans(data)
	fmt.Println(len(plans), plans[0].Shim.Name, plans[1].Shim.Name)

	failed, sibling := plan.NewResult(plans[0]), plan.NewResult(plans[1])
	failed.Outcome, failed.Reason = plan.Failed, plan.ReasonFetchFailed
	sibling.Outcome, sibling.Reason = plan.RolledBack, plan.ReasonSiblingFailed
	out, _ := plan.EncodeResults([]*plan.NodeResult{failed, sibling}, plan.MaxTerminationMessage)
	results, _ := plan.DecodeResults(out)
	for _, r := range results {
		fmt.Println(r.Shim.Name, r.Outcome, r.Reason)
	}
	// Output:
	// 2 spin gvisor
	// spin Failed FetchFailed
	// gvisor RolledBack SiblingFailed
}
