package installer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
)

// twoPlans are install plans of two Shims from one file server: a
// one-binary shim "wasm" and the gVisor-like bundle.
func twoPlans(t *testing.T, srv *testutil.FileServer) []*plan.NodePlan {
	t.Helper()
	a := testutil.NewArchive(t, testutil.ArchiveFile{Name: "containerd-shim-wasm-v2", Mode: 0o755, Data: []byte("wasm shim")})
	wasm := shimPlan("wasm", &plan.Artifact{Type: plan.SourceHTTP, URL: srv.Add("/wasm.tar.gz", a.Data), Digest: "sha256:" + a.SHA256})
	return []*plan.NodePlan{wasm, gvisorLikePlan(t, srv, "1")}
}

// TestInstallAllOneRestart: two Shims' plans in one operation restart
// containerd once, and both are installed and recorded; running them again
// changes nothing and restarts nothing.
func TestInstallAllOneRestart(t *testing.T) {
	ctx := context.Background()
	srv := testutil.StartFileServer(t)
	n := newFakeNode(t, "version = 2\n")
	inst := n.installer()
	plans := twoPlans(t, srv)

	res, err := inst.InstallAll(ctx, plans)
	if err != nil {
		t.Fatal(err)
	}
	if got := n.restarts.Load(); got != 1 {
		t.Errorf("containerd restarted %d times, want 1", got)
	}
	for k, r := range res {
		if r.Shim != plans[k].Shim.Name || !r.Changed || !r.Restarted {
			t.Errorf("result %d: %+v", k, r)
		}
	}
	st, err := inst.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 2 {
		t.Fatalf("status: %+v", st)
	}
	for _, s := range st {
		if len(s.Problems) > 0 {
			t.Errorf("%s: %v", s.Name, s.Problems)
		}
	}

	if res, err = inst.InstallAll(ctx, plans); err != nil {
		t.Fatal(err)
	}
	if got := n.restarts.Load(); got != 1 || res[0].Changed || res[1].Changed {
		t.Errorf("the same plans again: %d restarts, results %+v %+v", got, res[0], res[1])
	}
}

// TestInstallAllRollsBackTogether: when the second Shim fails after the
// restart (its handler is not served, its canary fails) or the operation is
// cancelled, both are rolled back with one more restart: the config is
// byte for byte as it was and neither bundle is left.
func TestInstallAllRollsBackTogether(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(*installer.Installer, context.CancelFunc)
		want  error
		// reasons are ReportAll's reasons of wasm's and gvisor's results.
		reasons [2]plan.Reason
	}{
		{"handler not served", func(i *installer.Installer, _ context.CancelFunc) {
			i.Health = installer.HealthFunc(func(_ context.Context, h string, present bool) error {
				if h == "runsc" && present {
					return installer.ErrUnhealthy
				}
				return nil
			})
		}, installer.ErrUnhealthy, [2]plan.Reason{plan.ReasonSiblingFailed, plan.ReasonSiblingFailed}},
		{"canary fails", func(i *installer.Installer, _ context.CancelFunc) {
			i.Canary = installer.CanaryFunc(func(_ context.Context, c plan.Canary) error {
				if c.Handler == "runsc" {
					return fmt.Errorf("%w: exit 3", installer.ErrCanaryFailed)
				}
				return nil
			})
		}, installer.ErrCanaryFailed, [2]plan.Reason{plan.ReasonSiblingFailed, plan.ReasonCanaryFailed}},
		{"cancelled at the second canary", func(i *installer.Installer, cancel context.CancelFunc) {
			i.Canary = installer.CanaryFunc(func(ctx context.Context, c plan.Canary) error {
				if c.Handler == "runsc" {
					cancel()
					<-ctx.Done()
					return ctx.Err()
				}
				return nil
			})
		}, installer.ErrInterrupted, [2]plan.Reason{plan.ReasonInterrupted, plan.ReasonInterrupted}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			srv := testutil.StartFileServer(t)
			n := newFakeNode(t, "version = 2\n")
			inst := n.installer()
			tc.setup(inst, cancel)
			plans := twoPlans(t, srv)
			for _, p := range plans {
				p.Canary = &plan.Canary{Handler: p.Handlers[0].Name, RuntimeClass: "canary", Namespace: "ns", Image: "img", Timeout: plan.Duration(time.Minute)}
				rehash(p)
			}
			if inst.Canary == nil {
				inst.Canary = installer.CanaryFunc(func(context.Context, plan.Canary) error { return nil })
			}
			res, err := inst.InstallAll(ctx, plans)
			if !errors.Is(err, installer.ErrRolledBack) || !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want ErrRolledBack and %v", err, tc.want)
			}
			for k, r := range installer.ReportAll(plans, res, err) {
				if r.Shim.Name != plans[k].Shim.Name || r.Outcome != plan.RolledBack || r.Reason != tc.reasons[k] {
					t.Errorf("result of %s: %s %s, want RolledBack %s (%s)", plans[k].Shim.Name, r.Outcome, r.Reason, tc.reasons[k], r.Message)
				}
			}
			if got := n.restarts.Load(); got != 2 {
				t.Errorf("containerd restarted %d times, want 2 (the operation's, the rollback's)", got)
			}
			if got, _ := os.ReadFile(n.config); !bytes.Equal(got, n.original) {
				t.Errorf("config after the rollback:\n%s", got)
			}
			for _, shim := range []string{"wasm", "gvisor"} {
				if _, err := os.Stat(n.local("/opt/shimkit/" + shim)); !os.IsNotExist(err) {
					t.Errorf("bundle of %s left: %v", shim, err)
				}
			}
			if st, err := inst.Status(context.Background()); err != nil || len(st) != 0 {
				t.Errorf("status after the rollback: %+v %v", st, err)
			}
		})
	}
}

// TestInstallAllCrashRecovers: an operation killed after both Shims'
// configs and bundles were changed leaves one pending record per Shim;
// the next operation (here one Shim alone) undoes both first.
func TestInstallAllCrashRecovers(t *testing.T) {
	ctx := context.Background()
	srv := testutil.StartFileServer(t)
	n := newFakeNode(t, "version = 2\n")
	plans := twoPlans(t, srv)
	crashing := n.installer()
	linked := 0
	crashing.AfterStep = func(step string) {
		if step == "placed" {
			if linked++; linked == 2 {
				panic("killed")
			}
		}
	}
	func() {
		defer func() { _ = recover() }()
		_, _ = crashing.InstallAll(ctx, plans)
		t.Fatal("the operation was not killed")
	}()
	inst := n.installer()
	st, err := inst.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var pending []string
	for _, s := range st {
		if len(s.Problems) > 0 && strings.Contains(s.Problems[0], "interrupted") {
			pending = append(pending, s.Name)
		}
	}
	if len(pending) != 2 {
		t.Fatalf("pending after the crash: %+v", st)
	}

	if _, err := inst.Install(ctx, plans[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(n.local("/opt/shimkit/gvisor")); !os.IsNotExist(err) {
		t.Errorf("the interrupted gvisor bundle is left: %v", err)
	}
	if st, err = inst.Status(ctx); err != nil || len(st) != 1 || st[0].Name != "wasm" || len(st[0].Problems) > 0 {
		t.Errorf("status after the recovery: %+v %v", st, err)
	}
	if _, err := inst.Uninstall(ctx, uninstallPlan("wasm")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(n.config); !bytes.Equal(got, n.original) {
		t.Errorf("config after the recovery and the uninstall:\n%s", got)
	}
}

// TestInstallAllRefusals: plans that cannot share an operation are refused
// before the node is touched.
func TestInstallAllRefusals(t *testing.T) {
	srv := testutil.StartFileServer(t)
	for _, tc := range []struct {
		name   string
		change func([]*plan.NodePlan) []*plan.NodePlan
	}{
		{"no plan", func([]*plan.NodePlan) []*plan.NodePlan { return nil }},
		{"one Shim twice", func(ps []*plan.NodePlan) []*plan.NodePlan { return []*plan.NodePlan{ps[0], ps[0]} }},
		{"one handler in two Shims", func(ps []*plan.NodePlan) []*plan.NodePlan {
			ps[1].Handlers[0].Name = "wasm"
			rehash(ps[1])
			return ps
		}},
		{"different restart settings", func(ps []*plan.NodePlan) []*plan.NodePlan {
			ps[1].Restart.Timeout = plan.Duration(3 * time.Minute)
			rehash(ps[1])
			return ps
		}},
		{"an uninstall", func(ps []*plan.NodePlan) []*plan.NodePlan {
			return []*plan.NodePlan{ps[0], uninstallPlan("gvisor")}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newFakeNode(t, "version = 2\n")
			_, err := n.installer().InstallAll(context.Background(), tc.change(twoPlans(t, srv)))
			if !errors.Is(err, plan.ErrInvalid) {
				t.Fatalf("err = %v, want plan.ErrInvalid", err)
			}
			if got, _ := os.ReadFile(n.config); !bytes.Equal(got, n.original) || n.restarts.Load() != 0 {
				t.Errorf("the node was touched: %d restarts, config\n%s", n.restarts.Load(), got)
			}
		})
	}
}

// TestPendingsJSON: one pending record is written as an object, as
// installers before combined operations wrote and read it; several as an
// array; both are read.
func TestPendingsJSON(t *testing.T) {
	one := installer.State{Pending: installer.Pendings{{Op: "install", Shim: "a"}}}
	two := installer.State{Pending: installer.Pendings{{Op: "install", Shim: "a"}, {Op: "install", Shim: "b"}}}
	for _, tc := range []struct {
		state installer.State
		want  string
	}{
		{one, `"pending":{"op":"install","shim":"a"}`},
		{two, `"pending":[{"op":"install","shim":"a"},{"op":"install","shim":"b"}]`},
	} {
		data, err := json.Marshal(tc.state)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), tc.want) {
			t.Errorf("%s, want %s", data, tc.want)
		}
		var back installer.State
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		if !cmp.Equal(back.Pending, tc.state.Pending) {
			t.Errorf("read back %s: %s", data, cmp.Diff(tc.state.Pending, back.Pending))
		}
	}
}
