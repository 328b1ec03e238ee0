package installer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
)

// sigtermChild is the installer process of TestSIGTERMAtEveryStep: it
// cancels its context on SIGTERM, as the shimkit-installer command does,
// sends itself SIGTERM right after step, and prints its NodeResult.
func sigtermChild(step string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	inst := &installer.Installer{
		HostRoot: os.Getenv("SHIMKIT_CRASH_ROOT"),
		AfterStep: func(s string) {
			if s == step {
				_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
				<-ctx.Done() // the signal has arrived: go on cancelled
			}
		},
	}
	p := crashPlan(os.Getenv("SHIMKIT_CRASH_URL"), os.Getenv("SHIMKIT_CRASH_SHA"))
	var res *installer.Result
	var err error
	if os.Getenv("SHIMKIT_CRASH_OP") == "uninstall" {
		p = uninstallPlan("demo")
		res, err = inst.Uninstall(ctx, p)
	} else {
		res, err = inst.Install(ctx, p)
	}
	_ = json.NewEncoder(os.Stdout).Encode(installer.Report(p, res, err))
	return 0
}

// runSIGTERMed runs an operation in a child that gets SIGTERM after step,
// and returns its result and how long it took from the signal to exit.
func runSIGTERMed(t *testing.T, n *testutil.Node, op, step, url, sha string) (*plan.NodeResult, time.Duration) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SHIMKIT_SIGTERM_AT="+step, "SHIMKIT_CRASH_OP="+op,
		"SHIMKIT_CRASH_ROOT="+n.Root, "SHIMKIT_CRASH_URL="+url, "SHIMKIT_CRASH_SHA="+sha)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s with SIGTERM after %q: %v\n%s", op, step, err, stderr.Bytes())
	}
	var r plan.NodeResult
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("result: %v\n%s\n%s", err, stdout.Bytes(), stderr.Bytes())
	}
	return &r, time.Since(start)
}

// TestSIGTERMAtEveryStep sends SIGTERM (a drain, an eviction) after every
// step of an install and of an uninstall on the systemd node: the installer
// either finishes or rolls back, within the grace period the plan asks of
// its pod, and the node is then either as the operation leaves it or as it
// was before, never in between.
func TestSIGTERMAtEveryStep(t *testing.T) {
	a := testutil.NewShimArchive(t, "demo", "/usr/bin/containerd-shim-runc-v2", nil)
	srv := testutil.StartFileServer(t)
	url := srv.Add("/demo.tar.gz", a.Data)
	ctx := context.Background()
	n, orig := bootNode(t, nodeCases(t)[0])
	inst := &installer.Installer{HostRoot: n.Root}
	grace := crashPlan(url, a.SHA256).Restart.GracePeriod()
	dirs := []string{"/etc/containerd", "/etc/systemd/system", "/opt", "/usr/local/bin"}
	clean := snapshot(t, n.Root, dirs...)
	if _, err := inst.Install(ctx, crashPlan(url, a.SHA256)); err != nil {
		t.Fatal(err)
	}
	installed := snapshot(t, n.Root, dirs...)
	if _, err := inst.Uninstall(ctx, uninstallPlan("demo")); err != nil {
		t.Fatal(err)
	}

	check := func(t *testing.T, r *plan.NodeResult, took time.Duration, done, undone string, present bool) {
		t.Helper()
		if took > grace {
			t.Errorf("took %v after SIGTERM, more than the grace period %v", took, grace)
		}
		want := undone
		switch r.Outcome {
		case plan.Succeeded:
			want = done
		case plan.RolledBack, plan.Failed:
			if r.Reason != plan.ReasonInterrupted {
				t.Errorf("reason %s, want Interrupted: %s", r.Reason, r.Message)
			}
			present = !present
		default:
			t.Fatalf("outcome %s: %s", r.Outcome, r.Message)
		}
		if got := snapshot(t, n.Root, dirs...); got != want {
			t.Errorf("%s: node is neither as before nor as after:\n%s\nwant:\n%s", r.Outcome, got, want)
		}
		if err := (&installer.CRIHealth{Socket: n.Socket()}).Check(ctx, "demo", present); err != nil {
			t.Error(err)
		}
		t.Logf("%s in %v", r.Outcome, took)
	}
	for _, step := range []string{"locked", "checked", "fetched", "configured", "placed", "linked", "units", "restarted-containerd", "restarted", "committed"} {
		t.Run("install/"+step, func(t *testing.T) {
			r, took := runSIGTERMed(t, n, "install", step, url, a.SHA256)
			check(t, r, took, installed, clean, true)
			if _, err := inst.Uninstall(ctx, uninstallPlan("demo")); err != nil {
				t.Fatal(err)
			}
		})
	}
	for _, step := range []string{"locked", "checked", "configured", "restarted-containerd", "restarted", "removed"} {
		t.Run("uninstall/"+step, func(t *testing.T) {
			if _, err := inst.Install(ctx, crashPlan(url, a.SHA256)); err != nil {
				t.Fatalf("%v\ncontainerd's journal:\n%s", err, n.Journal("containerd"))
			}
			r, took := runSIGTERMed(t, n, "uninstall", step, url, a.SHA256)
			check(t, r, took, clean, installed, false)
			if _, err := inst.Uninstall(ctx, uninstallPlan("demo")); err != nil {
				t.Fatal(err)
			}
		})
	}
	if got, _ := os.ReadFile(n.Local("/etc/containerd/config.toml")); !bytes.Equal(got, orig) {
		t.Errorf("config at the end:\n%s", got)
	}
}
