package installer_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
)

// TestDriftOnNode: on every containerd of the matrix, a Shim is installed
// and Verify finds the node as recorded; then, one after the other, the
// shim binary's bytes are replaced, the binary is deleted, config
// management puts containerd's config back (and restarts containerd, which
// then refuses pods of the handler), and a plan of another spec and
// digest is verified. Verify reports each with the entry that names it;
// installing the same plan again restores the binary byte for byte (no
// restart) or the handler (one restart; a pod sandbox runs with it
// again), says what it repaired, and Verify then finds nothing. An
// install on the node as recorded is a no-op without a restart.
func TestDriftOnNode(t *testing.T) {
	for _, b := range testutil.ContainerdMatrix(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			n := newProcNode(t, b)
			inst := n.installer()
			srv := testutil.StartFileServer(t)
			a := testutil.NewShimArchive(t, "demo", b.Binary("containerd-shim-runc-v2"), nil)
			p := httpPlan(srv, "/v1.tar.gz", a)
			if _, err := inst.Install(ctx, p); err != nil {
				t.Fatalf("install: %v\n%s", err, n.c.LogTail())
			}
			bundles := filepath.Join(n.dir, "bundles")
			first := installedBinary(t, bundles, "demo") // in the version directory
			rt := n.c.Runtime(t)
			if res, err := inst.Verify(ctx, verifyOf(p)); err != nil || len(res.Drift) != 0 {
				t.Fatalf("right after the install: %+v %v", res, err)
			}

			for _, tc := range []struct {
				name string
				// drift changes the node, or the verify plan.
				drift    func(t *testing.T, bin string, vp *plan.NodePlan)
				want     []string
				restarts int32 // of the repairing install
				planOnly bool  // the node is as recorded: nothing to repair
			}{
				{name: "binary replaced", drift: func(t *testing.T, bin string, _ *plan.NodePlan) {
					// As a package manager or an admin's script would: a new file renamed over it.
					writeFile(t, bin+".new", "#!/bin/sh\nexit 1\n")
					must(t, os.Rename(bin+".new", bin))
				}, want: []string{"file " + first + " was changed (" + sha(a.Binary) + " recorded, " + sha([]byte("#!/bin/sh\nexit 1\n")) + " found)"}},
				{name: "binary deleted", drift: func(t *testing.T, bin string, _ *plan.NodePlan) {
					must(t, os.Remove(bin))
				}, want: []string{"file " + first + " is missing"}},
				{name: "handler removed by config management", drift: func(t *testing.T, _ string, _ *plan.NodePlan) {
					must(t, os.WriteFile(n.c.ConfigPath, n.original, 0o644))
					// Up again before the check below: a containerd still
					// starting refuses every sandbox, the handler's or not.
					must(t, n.c.Restart(ctx))
					if _, _, err := testutil.RunSandbox(ctx, rt, "demo", "refused"); err == nil {
						t.Error("containerd still runs pods of the handler after its config was put back")
					}
				}, want: []string{"handler demo is not in containerd's config"}, restarts: 1},
				{name: "another spec and digest", planOnly: true, drift: func(_ *testing.T, _ string, vp *plan.NodePlan) {
					vp.SpecHash, vp.Artifact = "0000000000000000", &plan.Artifact{Type: plan.SourceHTTP, URL: vp.Artifact.URL, Digest: "sha256:" + strings.Repeat("1", 64)}
				}, want: []string{"installed spec " + p.SpecHash + ", the plan's is 0000000000000000", "installed digest " + p.Artifact.Digest + ", the plan pins sha256:" + strings.Repeat("1", 64)}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					// A repair lays the bundle out in another version
					// directory: the entries name the current one.
					bin := installedBinary(t, bundles, "demo")
					tc.want = replaceAll(tc.want, first, bin)
					vp := verifyOf(p)
					tc.drift(t, bin, vp)
					res, err := inst.Verify(ctx, vp)
					if err != nil {
						t.Fatalf("verify: %v", err)
					}
					if r := installer.Report(vp, res, nil); r.Outcome != plan.Succeeded || !cmp.Equal(r.Drift, tc.want) {
						t.Errorf("verify: %+v, drift (-want +got):\n%s", r, cmp.Diff(tc.want, r.Drift))
					}

					restarts := n.restarts.Load()
					res, err = inst.Install(ctx, p)
					if err != nil {
						t.Fatalf("repair: %v\n%s", err, n.c.LogTail())
					}
					if got := n.restarts.Load() - restarts; got != tc.restarts {
						t.Errorf("the repair restarted containerd %d times, want %d", got, tc.restarts)
					}
					if repaired := tc.want; !tc.planOnly && !cmp.Equal(res.Drift, repaired) || tc.planOnly && len(res.Drift) != 0 {
						t.Errorf("what the install repaired: %q", res.Drift)
					}
					now := installedBinary(t, bundles, "demo")
					if got, err := os.ReadFile(now); err != nil || string(got) != string(a.Binary) {
						t.Errorf("the binary after the repair is not the artifact's: %v", err)
					}
					_, exe, err := testutil.RunSandbox(ctx, rt, "demo", "after-"+strings.ReplaceAll(tc.name, " ", "-"))
					if err != nil || exe != now {
						t.Errorf("a sandbox with the handler after the repair: %v, runs %s, want %s\n%s", err, exe, now, n.c.LogTail())
					}
					removeSandboxes(ctx, t, rt)
					if res, err := inst.Verify(ctx, verifyOf(p)); err != nil || len(res.Drift) != 0 {
						t.Errorf("verify after the repair: %+v %v", res, err)
					}
					restarts = n.restarts.Load()
					if res, err := inst.Install(ctx, p); err != nil || res.Changed || res.Restarted || len(res.Drift) != 0 || n.restarts.Load() != restarts {
						t.Errorf("install on the node as recorded: %+v %v, %d restarts", res, err, n.restarts.Load()-restarts)
					}
				})
			}
		})
	}
}

func replaceAll(ss []string, old, new string) []string {
	out := make([]string, len(ss))
	for k, s := range ss {
		out[k] = strings.ReplaceAll(s, old, new)
	}
	return out
}
