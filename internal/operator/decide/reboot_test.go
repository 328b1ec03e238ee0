package decide

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// bootedNode is a node of pool a with the Shim at hash, verified at
// verified in the boot recorded ("": a record naming none), now in boot
// current ("": its kubelet reports none).
func bootedNode(name, hash string, verified time.Time, recorded, current string) *corev1.Node {
	n := nodeAt(name, "a", hash, map[string]string{nodelabel.VerifiedKey("spin"): fmt.Sprintf(
		`{"shimUID":"uid-spin","specHash":%q,"time":%q,"boot":%q}`, hash, verified.Format(time.RFC3339), recorded)})
	n.Status.NodeInfo.BootID = current
	return n
}

// TestVerifyAfterBoot: a node verified (or installed) in an earlier boot
// than its kubelet reports now is verified at once, before the nodes the
// period makes due; a node in the same boot, or whose record or kubelet
// names no boot, waits for the period.
func TestVerifyAfterBoot(t *testing.T) {
	shim := decideShim()
	hash := nodeview.SpecHash(shim)
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	recent, old := now.Add(-time.Minute), now.Add(-7*time.Hour)
	for _, tc := range []struct {
		name  string
		nodes []*corev1.Node
		want  []string // the nodes verified, in order
	}{
		{name: "same boot", nodes: []*corev1.Node{bootedNode("n1", hash, recent, "b1", "b1")}},
		{name: "booted again", nodes: []*corev1.Node{bootedNode("n1", hash, recent, "b1", "b2")}, want: []string{"n1"}},
		{name: "record names no boot", nodes: []*corev1.Node{bootedNode("n1", hash, recent, "", "b2")}},
		{name: "kubelet reports none", nodes: []*corev1.Node{bootedNode("n1", hash, recent, "b1", "")}},
		{name: "booted again before the period's due", want: []string{"n2", "n1"}, nodes: []*corev1.Node{
			bootedNode("n1", hash, old, "b1", "b1"), bootedNode("n2", hash, recent, "b1", "b2"), bootedNode("n3", hash, recent, "b1", "b1")}},
		{name: "booted again at an older spec: installed, not verified", nodes: []*corev1.Node{
			bootedNode("n1", "older", recent, "b1", "b2")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := planAt(t, shim, now, tc.nodes, 6*time.Hour)
			var got []string
			for _, st := range p.Verify {
				got = append(got, st.View.Node.Name)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("verified %v, want %v", got, tc.want)
			}
		})
	}
	if p := planAt(t, shim, now, []*corev1.Node{bootedNode("n1", hash, recent, "b1", "b2")}, -1); len(p.Verify) != 0 {
		t.Errorf("verification off (period -1), yet %d verified", len(p.Verify))
	}
}

// planAt plans one reconcile of the Shim over the nodes at now, batching
// Jobs with other Shims and verifying every period.
func planAt(t testing.TB, shim *v1alpha1.Shim, now time.Time, nodes []*corev1.Node, period time.Duration) *Plan {
	t.Helper()
	opts := shimspec.Settings{InstallerImage: "i", Namespace: "ns"}
	obs := NewSnapshot(shim, opts, now, now)
	obs.Aim(nil)
	obs.Shims, obs.Classes = []v1alpha1.Shim{*shim}, &ClassSet{}
	BuildViews(obs, NodeReads{Nodes: nodes})
	obs, records, err := Records(obs)
	if err != nil {
		t.Fatal(err)
	}
	p, err := PlanInstall(obs, records, Rules{Policy: Policy{Planner: shimspec.Planner(obs.Shim, obs.Hash), PlanFor: obs.PlanFor(opts), Delivery: Delivery(obs)}, Batching: true, VerifyPeriod: period})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
