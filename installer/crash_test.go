package installer_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
)

// TestMain doubles as the installer process the crash tests kill: with
// SHIMKIT_CRASH_AT set, this binary runs one operation and SIGKILLs itself
// right after that step.
func TestMain(m *testing.M) {
	if step := os.Getenv("SHIMKIT_CRASH_AT"); step != "" {
		os.Exit(crashChild(step))
	}
	if step := os.Getenv("SHIMKIT_SIGTERM_AT"); step != "" {
		os.Exit(sigtermChild(step))
	}
	os.Exit(m.Run())
}

func crashChild(step string) int {
	inst := &installer.Installer{
		HostRoot: os.Getenv("SHIMKIT_CRASH_ROOT"),
		AfterStep: func(s string) {
			if s == step {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		},
	}
	var err error
	if os.Getenv("SHIMKIT_CRASH_OP") == "uninstall" {
		_, err = inst.Uninstall(context.Background(), uninstallPlan("demo"))
	} else {
		_, err = inst.Install(context.Background(), crashPlan(os.Getenv("SHIMKIT_CRASH_URL"), os.Getenv("SHIMKIT_CRASH_SHA")))
	}
	if err != nil {
		_, _ = os.Stderr.WriteString(err.Error())
		return 1
	}
	return 0 // the step never came
}

func crashPlan(url, sha string) *plan.NodePlan {
	return shimPlan("demo", &plan.Artifact{Type: plan.SourceHTTP, URL: url, Digest: "sha256:" + sha})
}

// runKilled runs an operation in a child process that SIGKILLs itself
// after step, and checks that it died that way.
func runKilled(t *testing.T, n *testutil.Node, op, step, url, sha string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SHIMKIT_CRASH_AT="+step, "SHIMKIT_CRASH_OP="+op,
		"SHIMKIT_CRASH_ROOT="+n.Root, "SHIMKIT_CRASH_URL="+url, "SHIMKIT_CRASH_SHA="+sha)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the %s was not killed after %q: %v\n%s", op, step, err, out)
	}
}

// TestKilledBetweenSteps kills the installer after each step of an install
// and of an uninstall; the config on disk is always whole (the original or
// the edited file, never a mix); the next run first recovers, leaving no
// file shimkit created and losing no file it did not (the admin's files
// next to shimkit's stay); and running the operation again converges to
// exactly what an uninterrupted run leaves.
func TestKilledBetweenSteps(t *testing.T) {
	a := testutil.NewShimArchive(t, "demo", "/usr/bin/containerd-shim-runc-v2", nil)
	srv := testutil.StartFileServer(t)
	url := srv.Add("/demo.tar.gz", a.Data)
	wantHandler := containerdconfig.RuntimeHandler{Name: "demo", RuntimeType: "io.containerd.demo.v2", RuntimePath: "/opt/shimkit/demo/current/containerd-shim-demo-v2"}

	for _, step := range []string{"locked", "fetched", "configured", "placed", "linked", "units", "restarted-containerd", "restarted", "done"} {
		t.Run("install/"+step, func(t *testing.T) {
			t.Parallel() // each on its own node
			ctx := context.Background()
			n, orig := bootNode(t, nodeCases(t)[0])
			installed, _, err := containerdconfig.AddHandler("", orig, wantHandler)
			if err != nil {
				t.Fatal(err)
			}
			clean := withForeignFiles(t, n)
			runKilled(t, n, "install", step, url, a.SHA256)
			assertWhole(t, n, orig, installed)
			// Recovery (an uninstall of what is not installed) leaves the node as before.
			if _, err := (&installer.Installer{HostRoot: n.Root}).Uninstall(ctx, uninstallPlan("demo")); err != nil {
				t.Fatalf("recover: %v", err)
			}
			if got := snapshot(t, n.Root, crashDirs...); got != clean {
				t.Errorf("after recovery:\n%s\nwant as before:\n%s", got, clean)
			}

			if _, err := (&installer.Installer{HostRoot: n.Root}).Install(ctx, crashPlan(url, a.SHA256)); err != nil {
				t.Fatalf("re-run: %v", err)
			}
			if got, _ := os.ReadFile(n.Local("/etc/containerd/config.toml")); !bytes.Equal(got, installed) {
				t.Errorf("config after re-run:\n%s", got)
			}
			if bin, _ := os.ReadFile(n.Local("/opt/shimkit/demo/current/containerd-shim-demo-v2")); !bytes.Equal(bin, a.Binary) {
				t.Error("binary is not the artifact's")
			}
			if err := (&installer.CRIHealth{Socket: n.Socket()}).Check(ctx, "demo", true); err != nil {
				t.Error(err)
			}
			assertNoPending(t, n)
		})
	}
	for _, step := range []string{"locked", "configured", "restarted-containerd", "restarted", "removed", "done"} {
		t.Run("uninstall/"+step, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			n, orig := bootNode(t, nodeCases(t)[0])
			inst := &installer.Installer{HostRoot: n.Root}
			withForeignFiles(t, n)
			if _, err := inst.Install(ctx, crashPlan(url, a.SHA256)); err != nil {
				t.Fatal(err)
			}
			installed, _ := os.ReadFile(n.Local("/etc/containerd/config.toml"))
			whole := snapshot(t, n.Root, crashDirs...)
			runKilled(t, n, "uninstall", step, url, a.SHA256)
			assertWhole(t, n, orig, installed)
			// Recovery (an install of what the uninstall may have begun to
			// remove) leaves the node installed as before.
			if _, err := inst.Install(ctx, crashPlan(url, a.SHA256)); err != nil {
				t.Fatalf("recover: %v", err)
			}
			if got := snapshot(t, n.Root, crashDirs...); got != whole {
				t.Errorf("after recovery:\n%s\nwant as installed:\n%s", got, whole)
			}

			if _, err := inst.Uninstall(ctx, uninstallPlan("demo")); err != nil {
				t.Fatalf("re-run: %v", err)
			}
			if got, _ := os.ReadFile(n.Local("/etc/containerd/config.toml")); !bytes.Equal(got, orig) {
				t.Errorf("config after re-run:\n%s", got)
			}
			if err := (&installer.CRIHealth{Socket: n.Socket()}).Check(ctx, "demo", false); err != nil {
				t.Error(err)
			}
			assertClean(t, n)
		})
	}
}

// crashDirs are where shimkit writes on a node, next to files of others.
var crashDirs = []string{"/etc/containerd", "/etc/systemd/system", "/opt", "/usr/local/bin"}

// withForeignFiles puts files of an admin where shimkit writes, and
// returns the snapshot of those directories.
func withForeignFiles(t *testing.T, n *testutil.Node) string {
	t.Helper()
	for p, content := range map[string]string{
		"/etc/containerd/certs.d/registry.local/hosts.toml": "server = \"https://registry.local\"\n",
		"/etc/systemd/system/admin-agent.service":           "[Service]\nExecStart=/usr/local/bin/admin-agent\n",
		"/usr/local/bin/admin-agent":                        "#!/bin/sh\n",
		"/opt/vendor/bin/tool":                              "tool\n",
	} {
		writeFile(t, n.Local(p), content)
	}
	return snapshot(t, n.Root, crashDirs...)
}

// assertWhole checks the config is one of the two whole files.
func assertWhole(t *testing.T, n *testutil.Node, before, after []byte) {
	t.Helper()
	got, err := os.ReadFile(n.Local("/etc/containerd/config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, before) && !bytes.Equal(got, after) {
		t.Errorf("config after the kill is neither the original nor the edited file:\n%s", got)
	}
}

func assertNoPending(t *testing.T, n *testutil.Node) {
	t.Helper()
	st, err := (&installer.Installer{HostRoot: n.Root}).Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		if len(s.Problems) > 0 {
			t.Errorf("status %s: %v", s.Name, s.Problems)
		}
	}
	if _, err := os.Stat(n.Local("/etc/containerd/config.toml.shimkit-journal")); !os.IsNotExist(err) {
		t.Errorf("journal left: %v", err)
	}
	if left, _ := filepath.Glob(n.Local("/opt/shimkit/demo/*")); len(left) != 2 { // current and one version
		t.Errorf("in the bundle directory: %v, want current and one version", left)
	}
	if left, _ := filepath.Glob(n.Local("/opt/shimkit/demo/.*")); len(left) > 0 {
		t.Errorf("staging left in the bundle directory: %v", left)
	}
}
