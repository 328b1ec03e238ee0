package installer_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
)

// TestDriftIsFoundAndRepaired: on a node with the gVisor-like bundle,
// Verify finds each kind of drift, with the entry that names it; the
// same install plan again repairs it (the bundle's files byte for byte,
// the handler with one restart, no restart for the bundle alone), says
// what it repaired, and Verify then finds nothing. A drift of the plan
// (another spec or digest) is not the node's: the install is a no-op.
func TestDriftIsFoundAndRepaired(t *testing.T) {
	ctx := context.Background()
	srv := testutil.StartFileServer(t)
	for _, tc := range []struct {
		name string
		// drift changes the node, or the verify plan, after the install.
		drift func(t *testing.T, n *fakeNode, in installed, vp *plan.NodePlan)
		want  func(in installed, p *plan.NodePlan) []string
		// planOnly: the node is as recorded, the plan is not the record's;
		// restarts: the repairing install restarts containerd.
		planOnly, restarts bool
	}{
		{name: "file changed", drift: func(t *testing.T, n *fakeNode, in installed, _ *plan.NodePlan) {
			writeFile(t, n.local(in.dir+"/runsc"), "not runsc")
		}, want: func(in installed, _ *plan.NodePlan) []string {
			return []string{"file " + in.dir + "/runsc was changed (" + sha(in.files["runsc"]) + " recorded, " + sha([]byte("not runsc")) + " found)"}
		}},
		{name: "substituted file changed", drift: func(t *testing.T, n *fakeNode, in installed, _ *plan.NodePlan) {
			writeFile(t, n.local(in.dir+"/runsc.toml"), "binary_name = \"/usr/bin/runsc\"\n")
		}, want: func(in installed, _ *plan.NodePlan) []string {
			return []string{"file " + in.dir + "/runsc.toml was changed (" + sha(in.files["runsc.toml"]) + " recorded, " + sha([]byte("binary_name = \"/usr/bin/runsc\"\n")) + " found)"}
		}},
		{name: "file deleted", drift: func(t *testing.T, n *fakeNode, in installed, _ *plan.NodePlan) {
			must(t, os.Remove(n.local(in.dir+"/containerd-shim-runsc-v1")))
		}, want: func(in installed, _ *plan.NodePlan) []string {
			return []string{"file " + in.dir + "/containerd-shim-runsc-v1 is missing"}
		}},
		{name: "mode changed", drift: func(t *testing.T, n *fakeNode, in installed, _ *plan.NodePlan) {
			must(t, os.Chmod(n.local(in.dir+"/runsc"), 0o644))
		}, want: func(in installed, _ *plan.NodePlan) []string {
			return []string{"file " + in.dir + "/runsc has mode 0644, the plan's is 0755"}
		}},
		{name: "version directory removed", drift: func(t *testing.T, n *fakeNode, in installed, _ *plan.NodePlan) {
			must(t, os.RemoveAll(n.local(in.dir)))
		}, want: func(in installed, _ *plan.NodePlan) []string {
			return []string{"file " + in.dir + "/runsc is missing", "file " + in.dir + "/containerd-shim-runsc-v1 is missing", "file " + in.dir + "/runsc.toml is missing"}
		}},
		{name: "current link removed", drift: func(t *testing.T, n *fakeNode, _ installed, _ *plan.NodePlan) {
			must(t, os.Remove(n.local("/opt/shimkit/gvisor/current")))
		}, want: func(installed, *plan.NodePlan) []string {
			return []string{"link /opt/shimkit/gvisor/current is missing"}
		}},
		{name: "handler removed from the config", drift: func(t *testing.T, n *fakeNode, _ installed, _ *plan.NodePlan) {
			writeFile(t, n.config, string(n.original)) // config management puts its own back
		}, want: func(installed, *plan.NodePlan) []string {
			return []string{"handler runsc is not in containerd's config"}
		}, restarts: true},
		{name: "another spec", planOnly: true, drift: func(_ *testing.T, _ *fakeNode, _ installed, vp *plan.NodePlan) {
			vp.SpecHash = "0000000000000000"
		}, want: func(_ installed, p *plan.NodePlan) []string {
			return []string{"installed spec " + p.SpecHash + ", the plan's is 0000000000000000"}
		}},
		{name: "another digest", planOnly: true, drift: func(_ *testing.T, _ *fakeNode, _ installed, vp *plan.NodePlan) {
			a := *vp.Artifact
			a.Digest, vp.Artifact = "sha256:"+strings.Repeat("0", 64), &a
		}, want: func(_ installed, p *plan.NodePlan) []string {
			return []string{"installed digest " + p.Artifact.Digest + ", the plan pins sha256:" + strings.Repeat("0", 64)}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, inst, p, in := installedGvisor(t, srv)
			if res, err := inst.Verify(ctx, verifyOf(p)); err != nil || len(res.Drift) != 0 {
				t.Fatalf("right after the install: %+v %v", res, err)
			}

			vp := verifyOf(p)
			tc.drift(t, n, in, vp)
			want := tc.want(in, p)
			res, err := inst.Verify(ctx, vp)
			if err != nil {
				t.Fatal(err)
			}
			r := installer.Report(vp, res, nil)
			if r.Outcome != plan.Succeeded || r.Operation != plan.OpVerify || r.Digest != p.Artifact.Digest {
				t.Errorf("result: %+v", r)
			}
			if diff := cmp.Diff(want, r.Drift); diff != "" {
				t.Errorf("drift (-want +got):\n%s", diff)
			}

			restarts := n.restarts.Load()
			res, err = inst.Install(ctx, p)
			if err != nil {
				t.Fatalf("repair: %v", err)
			}
			if got := n.restarts.Load() - restarts; got != map[bool]int32{false: 0, true: 1}[tc.restarts] {
				t.Errorf("the repair restarted containerd %d times (restarts: %v)", got, tc.restarts)
			}
			repaired := want
			if tc.planOnly {
				repaired = nil
			}
			if diff := cmp.Diff(repaired, res.Drift); diff != "" {
				t.Errorf("what the install repaired (-want +got):\n%s", diff)
			}
			after := readInstalled(t, n, "gvisor", gvisorFiles...)
			if diff := cmp.Diff(in.files, after.files); diff != "" {
				t.Errorf("bundle after the repair (-installed +repaired):\n%s", diff)
			}
			for _, f := range gvisorFiles {
				if fi, err := os.Stat(n.local(after.dir + "/" + f)); err != nil || fi.Mode().Perm() != map[bool]os.FileMode{true: 0o644, false: 0o755}[f == "runsc.toml"] {
					t.Errorf("%s after the repair: %v %v", f, fi.Mode(), err)
				}
			}
			if entries, _ := os.ReadDir(n.local("/opt/shimkit/gvisor")); len(entries) != 2 {
				t.Errorf("bundle directory after the repair: %v, want current and one version", entries)
			}
			if res, err := inst.Verify(ctx, verifyOf(p)); err != nil || len(res.Drift) != 0 {
				t.Errorf("after the repair: %+v %v", res, err)
			}
			if st, err := inst.Status(ctx); err != nil || len(st) != 1 || len(st[0].Problems) != 0 {
				t.Errorf("status after the repair: %+v %v", st, err)
			}

			// Repaired, the node is as recorded: installing again is a no-op.
			restarts = n.restarts.Load()
			if res, err := inst.Install(ctx, p); err != nil || res.Changed || len(res.Drift) != 0 || n.restarts.Load() != restarts {
				t.Errorf("install on the repaired node: %+v %v, %d restarts", res, err, n.restarts.Load()-restarts)
			}
		})
	}
}

// TestUnitDrift: a sandboxer unit that was deleted is drift that the
// install repairs (the unit written and started again); one that was
// edited is drift too, but stays the editor's: the install refuses it
// (Conflict) and changes nothing.
func TestUnitDrift(t *testing.T) {
	ctx := context.Background()
	srv := testutil.StartFileServer(t)
	const unit = "/etc/systemd/system/shimkit-vmm.service"
	n := newFakeNode(t, "version = 3\n")
	defer serveSocket(t, n.local("/run/shimkit/vmm.sock"))()
	inst := n.installer()
	p := sandboxerPlan(t, srv, "vmm", "/bin/true")
	if _, err := inst.Install(ctx, p); err != nil {
		t.Fatal(err)
	}
	content, err := os.ReadFile(n.local(unit))
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.Remove(n.local(unit)))
	must(t, n.units.Stop(ctx, "shimkit-vmm.service"))
	if res, err := inst.Verify(ctx, verifyOf(p)); err != nil || !cmp.Equal(res.Drift, []string{"unit " + unit + " is missing"}) {
		t.Errorf("unit deleted: %+v %v", res, err)
	}
	if res, err := inst.Install(ctx, p); err != nil || len(res.Drift) != 1 {
		t.Fatalf("repair: %+v %v", res, err)
	}
	if got, _ := os.ReadFile(n.local(unit)); string(got) != string(content) || !n.units.Running("shimkit-vmm.service") {
		t.Errorf("unit after the repair (running %v):\n%s", n.units.Running("shimkit-vmm.service"), got)
	}

	writeFile(t, n.local(unit), "# tuned by the admin\n"+string(content))
	if res, err := inst.Verify(ctx, verifyOf(p)); err != nil || !cmp.Equal(res.Drift, []string{"unit " + unit + " was changed after shimkit wrote it"}) {
		t.Errorf("unit edited: %+v %v", res, err)
	}
	before := snapshot(t, n.root)
	res, err := inst.Install(ctx, p)
	if r := installer.Report(p, res, err); r.Reason != plan.ReasonConflict || !strings.Contains(r.Message, unit) {
		t.Errorf("install over the edited unit: %s/%s %q, want Conflict naming %s", r.Outcome, r.Reason, r.Message, unit)
	}
	if after := snapshot(t, n.root); after != before {
		t.Errorf("node changed:\n%s", after)
	}
}

// TestFailedRepairRollsBack: a repair whose canary fails is undone like
// an upgrade: "current" back at the drifted version, the version laid out
// again removed, the record as it was (so Verify still reports the drift).
func TestFailedRepairRollsBack(t *testing.T) {
	ctx := context.Background()
	n := newFakeNode(t, "version = 2\n")
	inst := n.installer()
	p := withCanary(gvisorLikePlan(t, testutil.StartFileServer(t), "v1"), "0")
	p = rehash(p)
	inst.Canary = installer.CanaryFunc(func(context.Context, plan.Canary) error { return nil })
	if _, err := inst.Install(ctx, p); err != nil {
		t.Fatal(err)
	}
	in := readInstalled(t, n, "gvisor", gvisorFiles...)
	writeFile(t, n.local(in.dir+"/runsc"), "not runsc")
	before := snapshot(t, n.root)
	inst.Canary = installer.CanaryFunc(func(context.Context, plan.Canary) error { return installer.ErrCanaryFailed })
	_, err := inst.Install(ctx, p)
	if !errors.Is(err, installer.ErrRolledBack) || installer.ReasonOf(err) != plan.ReasonCanaryFailed {
		t.Fatalf("repair with a failing canary: %v, want rolled back with CanaryFailed", err)
	}
	if after := snapshot(t, n.root); after != before {
		t.Errorf("node after the rollback:\n%s\nwant as before:\n%s", after, before)
	}
	if entries, _ := os.ReadDir(n.local("/opt/shimkit/gvisor")); len(entries) != 2 {
		t.Errorf("bundle directory after the rollback: %v, want current and the drifted version", entries)
	}
	if res, err := inst.Verify(ctx, verifyOf(p)); err != nil || len(res.Drift) != 1 {
		t.Errorf("verify after the rollback: %+v %v", res, err)
	}
}
