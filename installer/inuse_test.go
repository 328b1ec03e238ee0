package installer_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/installertest"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
)

// versions lists the Shim's bundle version directories.
func versions(t *testing.T, n *fakeNode, shim string) []string {
	t.Helper()
	entries, err := os.ReadDir(n.local(filepath.Join("/opt/shimkit", shim)))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestHandlerInUseStays: while a ready sandbox runs with a handler, an
// uninstall, or an install that drops the handler, is refused before the
// node changes (ErrHandlerInUse, the sandboxes named in the result); a
// stopped sandbox does not hold it. An upgrade keeps the earlier version
// while a sandbox created while it was current runs, and the next
// operation that finds none removes it; a sandbox created since the
// switch does not keep it.
func TestHandlerInUseStays(t *testing.T) {
	ctx := context.Background()
	n := newFakeNode(t, "version = 2\n")
	sbs := &installertest.FakeSandboxes{}
	inst := n.installer()
	inst.Sandboxes = sbs
	srv := testutil.StartFileServer(t)
	v1 := gvisorLikePlan(t, srv, "1")
	if _, err := inst.Install(ctx, v1); err != nil {
		t.Fatal(err)
	}
	first := versions(t, n, "gvisor")
	old := plan.Sandbox{Namespace: "default", Name: "web-1", Handler: "runsc", Ready: true, Created: time.Now()}
	sbs.Set(old, plan.Sandbox{Namespace: "default", Name: "other", Handler: "runc", Ready: true, Created: time.Now()})
	time.Sleep(10 * time.Millisecond)

	// Upgrade under web-1: v1 stays.
	if _, err := inst.Install(ctx, gvisorLikePlan(t, srv, "2")); err != nil {
		t.Fatal(err)
	}
	if got := versions(t, n, "gvisor"); len(got) != 2 || !slices.Contains(got, first[0]) {
		t.Errorf("versions after an upgrade under a pod: %v, want v1 (%s) kept beside v2", got, first[0])
	}
	// A pod started since the switch runs from v2: v3 drops v1 only once
	// web-1 is gone.
	time.Sleep(10 * time.Millisecond)
	since := plan.Sandbox{Namespace: "default", Name: "web-2", Handler: "runsc", Ready: true, Created: time.Now()}
	sbs.Set(since)
	cfg, _ := os.ReadFile(n.config)
	restarts := n.restarts.Load()

	// Uninstall while web-2 runs: refused, nothing changed.
	_, err := inst.Uninstall(ctx, uninstallPlan("gvisor"))
	var ie *installer.InUseError
	if !errors.Is(err, installer.ErrHandlerInUse) || !errors.As(err, &ie) || len(ie.Sandboxes) != 1 || ie.Sandboxes[0].Name != "web-2" {
		t.Fatalf("uninstall while web-2 runs: %v", err)
	}
	if r := installer.Report(uninstallPlan("gvisor"), nil, err); r.Reason != plan.ReasonHandlerInUse || r.Outcome != plan.Failed || len(r.InUse) != 1 {
		t.Errorf("result: %+v", r)
	}
	// A plan that renames the handler: refused as well.
	renamed := gvisorLikePlan(t, srv, "2")
	renamed.Handlers[0].Name = "runsc-new"
	if _, err := inst.Install(ctx, rehash(renamed)); !errors.Is(err, installer.ErrHandlerInUse) {
		t.Errorf("install dropping runsc while web-2 runs: %v", err)
	}
	if got, _ := os.ReadFile(n.config); string(got) != string(cfg) || n.restarts.Load() != restarts {
		t.Errorf("a refusal changed the node: config changed %v, %d restarts", string(got) != string(cfg), n.restarts.Load()-restarts)
	}
	// The same spec again, web-1 gone: v1 goes.
	if _, err := inst.Install(ctx, gvisorLikePlan(t, srv, "2")); err != nil {
		t.Fatal(err)
	}
	if got := versions(t, n, "gvisor"); len(got) != 1 || got[0] == first[0] {
		t.Errorf("versions once no pod runs from v1: %v", got)
	}
	// A stopped sandbox holds nothing; a runtime that cannot be asked
	// holds everything.
	sbs.Set(plan.Sandbox{Namespace: "default", Name: "web-2", Handler: "runsc", Created: since.Created})
	sbs.Fail = errors.New("connection refused")
	if _, err := inst.Uninstall(ctx, uninstallPlan("gvisor")); err == nil || errors.Is(err, installer.ErrHandlerInUse) {
		t.Errorf("uninstall when the sandboxes cannot be listed: %v, want that error", err)
	}
	sbs.Fail = nil
	if _, err := inst.Uninstall(ctx, uninstallPlan("gvisor")); err != nil {
		t.Errorf("uninstall with a stopped sandbox: %v", err)
	}
	if _, err := os.Stat(n.local("/opt/shimkit")); !os.IsNotExist(err) {
		t.Errorf("/opt/shimkit after the uninstall: %v", err)
	}
}
