package testutil_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/shimkit/shimkit/internal/testutil"
)

// TestNodeSandbox boots the node sandbox: systemd runs as its PID 1,
// containerd runs as a unit that answers CRI from the host, and the node
// has a boot ID of its own.
func TestNodeSandbox(t *testing.T) {
	n := testutil.StartNode(t, testutil.NodeOptions{OwnBootID: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := n.Exec(ctx, "systemctl", "is-active", "containerd")
	if err != nil || strings.TrimSpace(string(out)) != "active" {
		t.Fatalf("containerd unit: %q %v", out, err)
	}
	// (--wait: containerd answers before every unit of the boot is up.)
	out, _ = n.Exec(ctx, "systemctl", "is-system-running", "--wait")
	if s := strings.TrimSpace(string(out)); s != "running" && s != "degraded" {
		t.Errorf("systemd state %q", s)
	}
	t.Logf("systemd: %s", strings.TrimSpace(string(out)))
	out, err = n.Exec(ctx, "cat", "/proc/1/comm")
	if err != nil || strings.TrimSpace(string(out)) != "systemd" {
		t.Errorf("PID 1 is %q (%v)", out, err)
	}
	out, err = n.Exec(ctx, "cat", "/proc/sys/kernel/random/boot_id")
	host, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if got := strings.TrimSpace(string(out)); err != nil || got != testutil.BootID(t, n) || got == strings.TrimSpace(string(host)) {
		t.Errorf("the node's boot ID is %q (%v); want its own %q, not this machine's %q", out, err, testutil.BootID(t, n), host)
	}
}
