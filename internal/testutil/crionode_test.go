package testutil_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shimkit/shimkit/internal/testutil"
)

// TestCRIONodeSandbox boots a CRI-O node: systemd runs crio.service (and
// no containerd), whose CRI socket answers from the host with CRI-O's
// runtimes, and systemctl restarts it.
func TestCRIONodeSandbox(t *testing.T) {
	start := time.Now()
	n := testutil.StartNode(t, testutil.NodeOptions{CRIO: true})
	t.Logf("booted in %v", time.Since(start))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for unit, want := range map[string]string{"crio": "active", "containerd": "inactive"} {
		out, _ := n.Exec(ctx, "systemctl", "is-active", unit)
		if got := strings.TrimSpace(string(out)); got != want {
			t.Errorf("%s is %q, want %q\n%s", unit, got, want, n.Journal(unit))
		}
	}
	cri := testutil.CRIEndpoint{Socket: n.Socket()}
	hs, err := cri.RuntimeHandlers(ctx)
	if err != nil || !slices.Contains(hs, "runc") {
		t.Fatalf("CRI-O's handlers %v, %v\n%s", hs, err, n.Journal("crio"))
	}
	t.Logf("CRI-O serves %v", hs)
	// The unit's OOMScoreAdjust=-999 needs CAP_SYS_RESOURCE, which this
	// machine lacks: systemd goes on without it.
	out, err := n.Exec(ctx, "sh", "-c", "cat /proc/$(systemctl show -p MainPID --value crio)/oom_score_adj")
	t.Logf("crio's oom_score_adj: %s (%v)", strings.TrimSpace(string(out)), err)
	restart := time.Now()
	if out, err := n.Exec(ctx, "systemctl", "restart", "crio"); err != nil {
		t.Fatalf("systemctl restart crio: %v %s\n%s", err, out, n.Journal("crio"))
	}
	if _, err := cri.RuntimeHandlers(ctx); err != nil {
		t.Fatalf("after a restart: %v", err)
	}
	t.Logf("systemctl restart crio took %v", time.Since(restart))
}
