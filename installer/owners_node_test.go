package installer_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
)

// sameTypePlan is Shim name with handler name, whose binary is
// containerd-shim-demo-v2 (runtime type io.containerd.demo.v2) like every
// other Shim of this test.
func sameTypePlan(t *testing.T, srv *testutil.FileServer, name, shim string) *plan.NodePlan {
	t.Helper()
	a := testutil.NewShimArchive(t, "demo", shim, map[string]string{"SHIM": name + "\n"})
	p := shimPlan("demo", &plan.Artifact{Type: plan.SourceHTTP, URL: srv.Add("/"+name+".tar.gz", a.Data), Digest: "sha256:" + a.SHA256})
	p.Shim = plan.ShimRef{Name: name, UID: "uid-" + name}
	p.Handlers[0].Name = name
	return rehash(p)
}

// TestTwoShimsOneRuntimeType: two Shims whose handlers have the same
// runtime type share nothing on the node. On containerd 2.x (which honours
// runtime_path) both install, each handler's pods run the Shim's own
// binary, and removing either, in both orders, leaves the other working and
// whole. On containerd 1.6, which finds pod sandbox shims only by name on
// its PATH, the second Shim would need the first one's PATH name: it is
// refused and the node is left as it was.
func TestTwoShimsOneRuntimeType(t *testing.T) {
	cases := nodeCases(t)
	t.Run("containerd-2.2", func(t *testing.T) {
		nc := cases[1]
		n, orig := bootNode(t, nc)
		inst := &installer.Installer{HostRoot: n.Root}
		srv := testutil.StartFileServer(t)
		rt := runtimeClient(t, n.Socket())
		ctx := context.Background()
		for _, order := range [][2]string{{"alpha", "beta"}, {"beta", "alpha"}} {
			for _, s := range []string{"alpha", "beta"} {
				if _, err := inst.Install(ctx, sameTypePlan(t, srv, s, nc.shim)); err != nil {
					t.Fatalf("install %s: %v\n%s", s, err, n.Journal("containerd"))
				}
			}
			assertOwnBinary(ctx, t, n, rt, "alpha", "beta")
			first, second := order[0], order[1]
			if _, err := inst.Uninstall(ctx, uninstallPlan(first)); err != nil {
				t.Fatalf("uninstall %s: %v", first, err)
			}
			if exists(n.Local("/opt/shimkit/" + first)) {
				t.Errorf("%s's bundle is left", first)
			}
			assertOwnBinary(ctx, t, n, rt, second)
			if _, err := inst.Uninstall(ctx, uninstallPlan(second)); err != nil {
				t.Fatalf("uninstall %s: %v", second, err)
			}
			if got, _ := os.ReadFile(n.Local("/etc/containerd/config.toml")); !bytes.Equal(got, orig) {
				t.Errorf("config after removing %s then %s:\n%s", first, second, got)
			}
			assertClean(t, n)
		}
	})
	t.Run("containerd-1.6", func(t *testing.T) {
		nc := cases[0]
		n, _ := bootNode(t, nc)
		inst := &installer.Installer{HostRoot: n.Root}
		srv := testutil.StartFileServer(t)
		ctx := context.Background()
		if _, err := inst.Install(ctx, sameTypePlan(t, srv, "alpha", nc.shim)); err != nil {
			t.Fatal(err)
		}
		dirs := []string{"/etc/containerd", "/opt", "/usr/local/bin", "/var/lib/shimkit"}
		before := snapshot(t, n.Root, dirs...)
		p := sameTypePlan(t, srv, "beta", nc.shim)
		res, err := inst.Install(ctx, p)
		r := installer.Report(p, res, err)
		if r.Outcome != plan.Failed || r.Reason != plan.ReasonConflict || !strings.Contains(r.Message, "/usr/local/bin/containerd-shim-demo-v2") {
			t.Errorf("second Shim: %s/%s %q, want Failed/Conflict naming the PATH name", r.Outcome, r.Reason, r.Message)
		}
		if after := snapshot(t, n.Root, dirs...); after != before {
			t.Errorf("node changed:\nbefore:\n%s\nafter:\n%s", before, after)
		}
		assertOwnBinary(ctx, t, n, runtimeClient(t, n.Socket()), "alpha")
	})
}

// assertOwnBinary runs a pod sandbox with each handler (named as its Shim)
// and checks that its shim process runs that Shim's binary.
func assertOwnBinary(ctx context.Context, t *testing.T, n *testutil.Node, rt runtimeapi.RuntimeServiceClient, shims ...string) {
	t.Helper()
	for _, s := range shims {
		_, exe, err := testutil.RunSandbox(ctx, rt, s, "pod-"+s)
		if err != nil {
			t.Fatalf("%v\n%s", err, n.Journal("containerd"))
		}
		want, err := os.Readlink(n.Local("/opt/shimkit/" + s + "/current"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(exe, "/opt/shimkit/"+s+"/"+want+"/") {
			t.Errorf("sandbox with handler %s runs %s, want the binary of /opt/shimkit/%s/%s", s, exe, s, want)
		}
	}
	removeSandboxes(ctx, t, rt)
}

// adminHandler is what another writer (config management, an admin)
// appends to the config while an install runs.
const adminHandler = `
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.admin]
  runtime_type = "io.containerd.runc.v2"
`

// TestConcurrentEditSurvivesRollback: another writer edits the config after
// the installer wrote it and before the rollback of a failed install; the
// rollback takes out only shimkit's handler, the other edit survives, and
// containerd comes back healthy with it.
func TestConcurrentEditSurvivesRollback(t *testing.T) {
	ctx := context.Background()
	nc := nodeCases(t)[1]
	n, orig := bootNode(t, nc)
	cfg := n.Local("/etc/containerd/config.toml")
	inst := &installer.Installer{HostRoot: n.Root, Health: &installer.CRIHealth{Socket: n.Socket(), Timeout: 3 * time.Second},
		AfterStep: func(step string) {
			if step != "configured" {
				return
			}
			f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
			if err == nil {
				_, err = f.WriteString(adminHandler)
				f.Close()
			}
			if err != nil {
				t.Error(err)
			}
		}}
	srv := testutil.StartFileServer(t)
	p := httpPlan(srv, "/v1.tar.gz", testutil.NewShimArchive(t, "demo", nc.shim, nil))
	p.Handlers[0].Settings = map[string]any{"base_runtime_spec": "/nonexistent/spec.json"}
	_, err := inst.Install(ctx, rehash(p))
	if !errors.Is(err, installer.ErrRolledBack) {
		got, _ := os.ReadFile(cfg)
		t.Fatalf("err = %v, want rolled back\nconfig:\n%s\n%s", err, got, n.Journal("containerd"))
	}
	if got, _ := os.ReadFile(cfg); string(got) != string(orig)+adminHandler {
		t.Errorf("config after rollback:\n%s\nwant the original and the other writer's edit", got)
	}
	if err := (&installer.CRIHealth{Socket: n.Socket()}).Check(ctx, "admin", true); err != nil {
		t.Errorf("containerd after rollback: %v", err)
	}
	if err := (&installer.CRIHealth{Socket: n.Socket()}).Check(ctx, "demo", false); err != nil {
		t.Error(err)
	}
}
