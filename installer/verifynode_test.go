package installer_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
)

// verifyOf is the verify plan of an install plan: the same document under
// the verify operation.
func verifyOf(p *plan.NodePlan) *plan.NodePlan {
	c := *p
	c.Operation = plan.OpVerify
	return &c
}

func sha(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// installed is what a fresh install laid out: the version directory (a
// node path) and each bundle file's bytes by name.
type installed struct {
	dir   string
	files map[string][]byte
}

// installedGvisor installs the gvisor-like bundle v1 (served by srv) on a
// new fake node and returns the node, its installer, the plan and what
// the install placed.
func installedGvisor(t *testing.T, srv *testutil.FileServer) (*fakeNode, *installer.Installer, *plan.NodePlan, installed) {
	t.Helper()
	n := newFakeNode(t, "version = 2\n")
	inst := n.installer()
	p := gvisorLikePlan(t, srv, "v1")
	if _, err := inst.Install(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	return n, inst, p, readInstalled(t, n, "gvisor", gvisorFiles...)
}

func readInstalled(t *testing.T, n *fakeNode, shim string, names ...string) installed {
	t.Helper()
	cur := "/opt/shimkit/" + shim + "/current"
	v, err := os.Readlink(n.local(cur))
	if err != nil {
		t.Fatal(err)
	}
	in := installed{dir: path.Join(path.Dir(cur), v), files: map[string][]byte{}}
	for _, f := range names {
		if in.files[f], err = os.ReadFile(n.local(cur + "/" + f)); err != nil {
			t.Fatal(err)
		}
	}
	return in
}

var gvisorFiles = []string{"runsc", "containerd-shim-runsc-v1", "runsc.toml"}

const statePath = "/var/lib/shimkit/state.json"

// editState rewrites the node's state file through edit.
func editState(t *testing.T, n *fakeNode, edit func(map[string]any)) {
	t.Helper()
	data, err := os.ReadFile(n.local(statePath))
	if err != nil {
		t.Fatal(err)
	}
	s := map[string]any{}
	must(t, json.Unmarshal(data, &s))
	edit(s)
	data, err = json.Marshal(s)
	must(t, err)
	must(t, os.WriteFile(n.local(statePath), data, 0o644))
}

// TestVerifyNotInstalled: a node without the Shim, even one no installer
// ever ran on, says "not installed", and Verify leaves no trace there (no
// state directory, no lock file).
func TestVerifyNotInstalled(t *testing.T) {
	ctx := context.Background()
	n := newFakeNode(t, "version = 2\n")
	p := gvisorLikePlan(t, testutil.StartFileServer(t), "v1")
	before := snapshot(t, n.root)
	res, err := n.installer().Verify(ctx, verifyOf(p))
	if err != nil {
		t.Fatal(err)
	}
	if r := installer.Report(verifyOf(p), res, nil); r.Outcome != plan.Succeeded || !cmp.Equal(r.Drift, []string{"not installed"}) || r.Digest != "" {
		t.Errorf("result: %+v", r)
	}
	if after := snapshot(t, n.root); after != before || exists(n.local("/var/lib/shimkit")) {
		t.Errorf("node changed by a verify:\n%s", after)
	}
}

// TestVerifyIsReadOnly: on a drifted node with an interrupted operation
// pending, Verify reports both and changes nothing (the pending install
// is not recovered, the drifted file not touched); while an install holds
// the node lock, it waits.
func TestVerifyIsReadOnly(t *testing.T) {
	ctx := context.Background()
	n, inst, p, in := installedGvisor(t, testutil.StartFileServer(t))
	must(t, os.Remove(n.local(in.dir+"/runsc")))
	editState(t, n, func(s map[string]any) { s["pending"] = map[string]any{"op": "install", "shim": "gvisor"} })
	before := snapshot(t, n.root)
	res, err := inst.Verify(ctx, verifyOf(p))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"file " + in.dir + "/runsc is missing", "an interrupted install is pending; the next install or uninstall recovers it"}
	if diff := cmp.Diff(want, res.Drift); diff != "" {
		t.Errorf("drift (-want +got):\n%s", diff)
	}
	if after := snapshot(t, n.root); after != before {
		t.Errorf("node changed by a verify:\n%s", after)
	}

	// An install in progress (held in its restart) holds the lock.
	restarting, release := make(chan struct{}), make(chan struct{})
	slow := n.installer()
	slow.Restarter = installer.RestartFunc(func(context.Context) error { close(restarting); <-release; return nil })
	done := make(chan error, 1)
	writeFile(t, n.config, string(n.original)) // a change, so that the install restarts
	go func() {
		_, err := slow.Install(ctx, p)
		done <- err
	}()
	<-restarting
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err = inst.Verify(short, verifyOf(p))
	if !errors.Is(err, context.DeadlineExceeded) || installer.ReasonOf(err) != plan.ReasonInterrupted {
		t.Errorf("verify during an install: %v, want it to wait for the lock", err)
	}
	close(release)
	must(t, <-done)
	if res, err := inst.Verify(ctx, verifyOf(p)); err != nil || len(res.Drift) != 0 {
		t.Errorf("after the install: %+v %v", res, err)
	}
}

// TestVerifyOldRecord: a record of an installer before file digests has
// none: a file of other bytes is not told from the installed one, a
// missing file still is. Installing the same plan again records them.
func TestVerifyOldRecord(t *testing.T) {
	ctx := context.Background()
	n, inst, p, in := installedGvisor(t, testutil.StartFileServer(t))
	editState(t, n, func(s map[string]any) { delete(s["shims"].(map[string]any)["gvisor"].(map[string]any), "fileDigests") })
	writeFile(t, n.local(in.dir+"/runsc.toml"), "edited\n")
	if res, err := inst.Verify(ctx, verifyOf(p)); err != nil || len(res.Drift) != 0 {
		t.Errorf("changed bytes, no digests recorded: %+v %v", res, err)
	}
	must(t, os.Remove(n.local(in.dir+"/runsc")))
	if res, err := inst.Verify(ctx, verifyOf(p)); err != nil || !cmp.Equal(res.Drift, []string{"file " + in.dir + "/runsc is missing"}) {
		t.Errorf("missing file, no digests recorded: %+v %v", res, err)
	}
	if _, err := inst.Install(ctx, p); err != nil {
		t.Fatal(err)
	}
	after := readInstalled(t, n, "gvisor", gvisorFiles...)
	writeFile(t, n.local(after.dir+"/runsc.toml"), "edited\n")
	if res, err := inst.Verify(ctx, verifyOf(p)); err != nil || len(res.Drift) != 1 || !strings.Contains(res.Drift[0], "runsc.toml was changed") {
		t.Errorf("changed bytes after a reinstall recorded digests: %+v %v", res, err)
	}
}

// TestVerifyFailures: what keeps Verify from comparing is a failure with
// the usual reason; a plan of another operation is refused.
func TestVerifyFailures(t *testing.T) {
	ctx := context.Background()
	srv := testutil.StartFileServer(t)
	for _, tc := range []struct {
		name   string
		breaks func(t *testing.T, n *fakeNode, vp *plan.NodePlan)
		reason plan.Reason
		says   string
	}{
		{"config does not parse", func(t *testing.T, n *fakeNode, _ *plan.NodePlan) {
			writeFile(t, n.config, "version = 2\n[plugins\n")
		}, plan.ReasonConfigInvalid, "/etc/containerd/config.toml"},
		{"state does not parse", func(t *testing.T, n *fakeNode, _ *plan.NodePlan) {
			writeFile(t, n.local(statePath), "{")
		}, plan.ReasonNodeError, statePath},
		{"an install plan", func(_ *testing.T, _ *fakeNode, vp *plan.NodePlan) {
			vp.Operation = plan.OpInstall
		}, plan.ReasonInvalidPlan, `operation "install" of Shim gvisor given to Verify`},
		{"no spec hash", func(_ *testing.T, _ *fakeNode, vp *plan.NodePlan) {
			vp.SpecHash = ""
		}, plan.ReasonInvalidPlan, "specHash: required for verify"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newFakeNode(t, "version = 2\n")
			inst := n.installer()
			p := gvisorLikePlan(t, srv, "v1")
			if _, err := inst.Install(ctx, p); err != nil {
				t.Fatal(err)
			}
			vp := verifyOf(p)
			tc.breaks(t, n, vp)
			res, err := inst.Verify(ctx, vp)
			r := installer.Report(vp, res, err)
			if err == nil || r.Outcome != plan.Failed || r.Reason != tc.reason || !strings.Contains(r.Message, tc.says) {
				t.Errorf("result %s/%s %q, want Failed/%s naming %q", r.Outcome, r.Reason, r.Message, tc.reason, tc.says)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
