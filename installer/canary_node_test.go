package installer_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
)

// withCanary adds a canary of the test pause image: "pause exit <code>".
func withCanary(p *plan.NodePlan, code string) *plan.NodePlan {
	p.Canary = &plan.Canary{Handler: p.Handlers[0].Name, RuntimeClass: "canary", Namespace: "default", Image: testutil.PauseImageRef, Args: []string{"exit", code}, Timeout: plan.Duration(30 * time.Second)}
	return p
}

// TestCanaryOnNode runs canary pods through the node's real containerd and
// systemd: a shim that works installs, and its canary leaves nothing
// behind; a shim that crashes on start, and an upgrade whose canary
// container fails, are rolled back (the config byte for byte, the handler
// gone or the old version current, containerd healthy) with CanaryFailed.
func TestCanaryOnNode(t *testing.T) {
	for _, nc := range nodeCases(t) {
		t.Run(nc.name, func(t *testing.T) {
			ctx := context.Background()
			n, orig := bootNode(t, nc)
			inst, rt := criInstaller(t, n)
			srv := testutil.StartFileServer(t)

			v1 := testutil.NewShimArchive(t, "demo", nc.shim, nil)
			res, err := inst.Install(ctx, withCanary(httpPlan(srv, "/v1.tar.gz", v1), "0"))
			if err != nil || !res.Restarted || res.CanaryDuration <= 0 {
				t.Fatalf("install with a passing canary: %+v %v\n%s", res, err, n.Journal("containerd"))
			}
			t.Logf("the canary passed in %v", res.CanaryDuration)
			assertNoCanaryLeft(ctx, t, n, rt)
			installed, err := os.ReadFile(n.Local("/etc/containerd/config.toml"))
			if err != nil {
				t.Fatal(err)
			}

			// The container of the new version's canary exits 3: the upgrade
			// is undone and v1 stays.
			v2 := testutil.NewShimArchive(t, "demo", nc.shim, map[string]string{"VERSION": "2\n"})
			_, err = inst.Install(ctx, withCanary(httpPlan(srv, "/v2.tar.gz", v2), "3"))
			if !errors.Is(err, installer.ErrRolledBack) || !errors.Is(err, installer.ErrCanaryFailed) || installer.ReasonOf(err) != plan.ReasonCanaryFailed {
				t.Fatalf("failing canary container: %v, want rolled back with CanaryFailed", err)
			}
			if !strings.Contains(err.Error(), "exited 3") || !strings.Contains(err.Error(), "pause: exit 3") {
				t.Errorf("the message lacks the exit code and the log: %v", err)
			}
			if got, _ := os.ReadFile(n.Local("/etc/containerd/config.toml")); !bytes.Equal(got, installed) {
				t.Errorf("config after the upgrade's rollback:\n%s", got)
			}
			st, err := inst.Status(ctx)
			if err != nil || len(st) != 1 || st[0].State.Digest != "sha256:"+v1.SHA256 || len(st[0].Problems) > 0 {
				t.Errorf("after the rollback the node has %+v (%v), want v1 intact", st, err)
			}
			assertNoCanaryLeft(ctx, t, n, rt)

			// A shim that exits as soon as containerd starts it: the sandbox
			// never runs, the handler is removed again.
			crash := filepath.Join(t.TempDir(), "containerd-shim-crash-v2")
			if err := os.WriteFile(crash, []byte("#!/bin/sh\necho crashing >&2\nexit 1\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			p := withCanary(namedHTTPPlan("crash", srv, "/crash.tar.gz", testutil.NewShimArchive(t, "crash", crash, nil)), "0")
			res, err = inst.Install(ctx, p)
			if !errors.Is(err, installer.ErrRolledBack) || installer.ReasonOf(err) != plan.ReasonCanaryFailed {
				t.Fatalf("crashing shim: %+v %v, want rolled back with CanaryFailed", res, err)
			}
			if !strings.Contains(err.Error(), "RunPodSandbox") {
				t.Errorf("the message does not say the sandbox failed: %v", err)
			}
			if got, _ := os.ReadFile(n.Local("/etc/containerd/config.toml")); !bytes.Equal(got, installed) {
				t.Errorf("config after the crashing shim's rollback:\n%s", got)
			}
			h := &installer.CRIHealth{Socket: n.Socket()}
			if err := h.Check(ctx, "crash", false); err != nil {
				t.Errorf("after the rollback: %v", err)
			}
			if err := h.Check(ctx, "demo", true); err != nil {
				t.Errorf("after the rollback: %v", err)
			}
			if exists(n.Local("/opt/shimkit/crash")) {
				t.Error("the crashing shim's bundle is left")
			}
			assertNoCanaryLeft(ctx, t, n, rt)

			if _, err := inst.Uninstall(ctx, uninstallPlan("demo")); err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(n.Local("/etc/containerd/config.toml")); !bytes.Equal(got, orig) {
				t.Errorf("config after uninstall:\n%s", got)
			}
			assertClean(t, n)
		})
	}
}

// assertNoCanaryLeft: no sandbox of the canary's namespace and no log
// directory stay on the node.
// criInstaller is an installer for the node whose canaries run over its
// CRI (criCanary), and a CRI client of the node.
func criInstaller(t *testing.T, n *testutil.Node) (*installer.Installer, runtimeapi.RuntimeServiceClient) {
	t.Helper()
	// No kubelet whose connection to containerd would reconnect: no settle.
	return &installer.Installer{HostRoot: n.Root, Canary: &criCanary{Socket: n.Socket(), HostRoot: n.Root}, CanarySettle: -1}, runtimeClient(t, n.Socket())
}

func assertNoCanaryLeft(ctx context.Context, t *testing.T, n *testutil.Node, rt runtimeapi.RuntimeServiceClient) {
	t.Helper()
	list, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range list.Items {
		if sb.GetMetadata().GetNamespace() == canaryNamespace {
			t.Errorf("canary sandbox left: %s %s", sb.Id, sb.State)
		}
	}
	if entries, _ := os.ReadDir(n.Local("/var/log/shimkit-canary")); len(entries) > 0 {
		t.Errorf("canary logs left: %d", len(entries))
	}
}
