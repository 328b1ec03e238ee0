package decide

import (
	"time"

	"fmt"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// decideShim is a Shim of the nodes labelled pool=a, maxUpdate 2.
func decideShim() *v1alpha1.Shim {
	two := intstr.FromInt32(2)
	return &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "spin", UID: "uid-spin"}, Spec: v1alpha1.ShimSpec{
		NodeSelector: map[string]string{"pool": "a"},
		FetchStrategy: v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{
			Location: "https://artifacts.invalid/spin.tar.gz", SHA256: strings.Repeat("a", 64)}},
		RuntimeClass:    v1alpha1.RuntimeClassSpec{Name: "spin"},
		RolloutStrategy: &v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutRolling, Rolling: &v1alpha1.RollingUpdate{MaxUpdate: &two}},
	}}
}

// nodeAt is a Linux containerd node of the pool (pool "" : none), with the
// Shim's label, hash and verification record (as nodelabel.Mark writes
// them) when hash is set, and its canary.
func nodeAt(name, pool, hash string, annotations map[string]string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name),
		Labels: map[string]string{corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux"}, Annotations: map[string]string{}},
		Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{OperatingSystem: "linux", Architecture: "amd64", ContainerRuntimeVersion: "containerd://2.2.9"}}}
	if pool != "" {
		n.Labels["pool"] = pool
	}
	if hash != "" {
		n.Labels[nodelabel.Key("spin")] = nodelabel.Installed
		n.Annotations[nodelabel.Key("spin")] = hash
		n.Annotations[nodelabel.VerifiedKey("spin")] = `{"shimUID":"uid-spin","specHash":"` + hash + `","time":"2026-11-25T06:00:00Z"}`
	}
	for k, v := range annotations {
		n.Annotations[k] = v
	}
	return n
}

func failedJob(op, hash, canary string, reason plan.Reason) *jobview.View {
	j := &batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue}}}}
	return &jobview.View{Object: j, Op: op, SpecHash: hash, Canary: canary, ResultRead: true,
		Result: &plan.NodeResult{Outcome: plan.RolledBack, Reason: reason}}
}

// TestDecideRollout: the decision of one reconcile, from a snapshot alone
// (no API server, no client): which nodes start, and where the rollout
// stands.
func TestDecideRollout(t *testing.T) {
	shim := decideShim()
	hash := nodeview.SpecHash(shim)
	canary := nodeview.CanaryHash(shim)
	otherUID := `{"shimUID":"uid-old","op":"install","specHash":"` + hash + `","reason":"Conflict","time":"2026-11-25T06:00:00Z"}`
	for _, tc := range []struct {
		name    string
		nodes   []*corev1.Node
		jobs    map[string]*jobview.View
		refused bool
		shared  map[string]bool
		// want
		start, remove, failed []string
		halted, done          bool
	}{
		{name: "fresh: maxUpdate nodes start", nodes: []*corev1.Node{nodeAt("n1", "a", "", nil), nodeAt("n2", "a", "", nil), nodeAt("n3", "a", "", nil)},
			start: []string{"*", "*"}},
		{name: "shared nodes first", nodes: []*corev1.Node{nodeAt("n1", "a", "", nil), nodeAt("n2", "a", "", nil), nodeAt("n3", "a", "", nil)},
			shared: map[string]bool{"n3": true}, start: []string{"n3", "*"}},
		{name: "installed at the spec: done", nodes: []*corev1.Node{nodeAt("n1", "a", hash, nil)}, done: true},
		{name: "an old hash upgrades", nodes: []*corev1.Node{nodeAt("n1", "a", "old", nil)}, start: []string{"n1"}},
		{name: "a node leaving the pool is removed", nodes: []*corev1.Node{nodeAt("n1", "b", hash, nil), nodeAt("n2", "a", hash, nil)}, remove: []string{"n1"}},
		{name: "refused: no install starts, removals go on", refused: true,
			nodes: []*corev1.Node{nodeAt("n1", "a", "", nil), nodeAt("n2", "b", hash, nil)}, remove: []string{"n2"}},
		{name: "a failed Job halts", nodes: []*corev1.Node{nodeAt("n1", "a", "", nil), nodeAt("n2", "a", "", nil)},
			jobs: map[string]*jobview.View{"n1": failedJob(jobview.OpInstall, hash, canary, plan.ReasonConflict)}, failed: []string{"n1"}, halted: true},
		{name: "a failed canary of another canary is tried again", nodes: []*corev1.Node{nodeAt("n1", "a", "", nil)},
			jobs: map[string]*jobview.View{"n1": failedJob(jobview.OpInstall, hash, "older-canary", plan.ReasonCanaryFailed)}, start: []string{"n1"}},
		{name: "a failed canary of this canary halts", nodes: []*corev1.Node{nodeAt("n1", "a", "", nil)},
			jobs: map[string]*jobview.View{"n1": failedJob(jobview.OpInstall, hash, canary, plan.ReasonCanaryFailed)}, failed: []string{"n1"}, halted: true},
		{name: "another Shim object's failure record does not halt",
			nodes: []*corev1.Node{nodeAt("n1", "a", "", map[string]string{nodelabel.FailureKey("spin"): otherUID})}, start: []string{"n1"}},
		{name: "a label another Shim object put is installed again",
			nodes: []*corev1.Node{nodeAt("n1", "a", hash, map[string]string{nodelabel.VerifiedKey("spin"): `{"shimUID":"uid-old","specHash":"` + hash + `","time":"2026-11-25T06:00:00Z"}`})},
			start: []string{"n1"}},
		{name: "a label no Shim wrote (a node pool's) is installed",
			nodes: []*corev1.Node{func() *corev1.Node {
				n := nodeAt("n1", "a", hash, nil)
				delete(n.Annotations, nodelabel.VerifiedKey("spin"))
				return n
			}()}, start: []string{"n1"}},
		{name: "control-plane nodes are left alone", nodes: []*corev1.Node{func() *corev1.Node {
			n := nodeAt("cp", "a", "", nil)
			n.Labels[nodeview.ControlPlaneLabel] = ""
			return n
		}()}, done: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := &Snapshot{Shim: shim, Hash: hash, SpecHash: hash}
			if tc.refused {
				obs.Refusal = &shimspec.Refusal{Reason: v1alpha1.ReasonSignatureMissing, Message: "no signature"}
			}
			for _, n := range tc.nodes {
				v := NodeViewOf(shim, n, canary)
				v.Job = tc.jobs[n.Name]
				obs.Views = append(obs.Views, v)
			}
			d, err := Decide(obs, Policy{Planner: shimspec.Planner(obs.Shim, obs.Hash), Shared: tc.shared, PlanFor: obs.PlanFor(shimspec.Settings{InstallerImage: "i", Namespace: "ns"})})
			if err != nil {
				t.Fatal(err)
			}
			if !matchNames(d.Rollin.Start, tc.start) || !matchNames(d.Removal.Start, tc.remove) || !slices.Equal(d.Rollin.Failed, tc.failed) ||
				d.Rollin.Halted != tc.halted || d.Done() != tc.done {
				t.Errorf("start %v remove %v failed %v halted %v done %v; want %v %v %v %v %v",
					d.Rollin.Start, d.Removal.Start, d.Rollin.Failed, d.Rollin.Halted, d.Done(), tc.start, tc.remove, tc.failed, tc.halted, tc.done)
			}
			for _, name := range d.Rollin.Start {
				if v := d.ByName[name]; v.Plan == nil || v.Plan.Node != name || v.Plan.SpecHash != hash {
					t.Errorf("node %s starts without its plan: %+v %v", name, v.Plan, v.PlanErr)
				}
			}
		})
	}
}

// matchNames: got has the names of want in order, "*" matching any name.
func matchNames(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range want {
		if want[i] != "*" && got[i] != want[i] {
			return false
		}
	}
	return true
}

// TestDecideRemoval: a deleted Shim removes itself from the nodes that
// have it, maxUpdate at a time, whether they still match or not; a node
// whose install was refused (a failure record, no label) has nothing to
// uninstall.
func TestDecideRemoval(t *testing.T) {
	shim := decideShim()
	hash := nodeview.SpecHash(shim)
	refused := map[string]string{nodelabel.FailureKey("spin"): `{"shimUID":"uid-spin","op":"install","specHash":"` + hash + `","reason":"Conflict","time":"2026-11-25T06:00:00Z"}`}
	obs := &Snapshot{Shim: shim, Hash: hash, SpecHash: hash}
	for _, n := range []*corev1.Node{nodeAt("n1", "a", hash, nil), nodeAt("n2", "b", "old", nil), nodeAt("n3", "a", hash, nil), nodeAt("n4", "a", "", refused)} {
		obs.Views = append(obs.Views, NodeViewOf(shim, n, nodeview.CanaryHash(shim)))
	}
	d, err := DecideRemoval(obs, shimspec.Planner(obs.Shim, obs.Hash), DeliveryRules{})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Removal.Start) != 2 || slices.Contains(d.Removal.Start, "n4") || d.Removal.Remaining != 3 || len(d.Rollin.Start) != 0 {
		t.Errorf("removal %+v, install %+v: want two of n1-n3 started (maxUpdate 2), three remaining, n4 left alone", d.Removal, d.Rollin)
	}
}

// BenchmarkObserveDecide1000Nodes is a reconcile's pure part at 1,000
// nodes, none of them installed yet, as a reconcile runs it: the
// snapshot's head and target, the node views (BuildViews), the records
// and the whole plan (PlanInstall: the decision, classes, batch offer,
// taints, the rollout's record, verifications)
// (go test ./internal/operator/decide -run '^$' -bench ObserveDecide -benchmem).
func BenchmarkObserveDecide1000Nodes(b *testing.B) {
	shim := decideShim()
	nodes := make([]*corev1.Node, 1000)
	for i := range nodes {
		nodes[i] = nodeAt(fmt.Sprintf("n%04d", i), "a", "", nil)
	}
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	for b.Loop() {
		if p := planAt(b, shim, now, nodes, 6*time.Hour); len(p.Decision.Rollin.Start) != 2 {
			b.Fatalf("plan %v: want 2 starts (maxUpdate 2)", p)
		}
	}
}
