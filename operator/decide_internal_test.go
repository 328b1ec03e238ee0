package operator

import (
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
	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/rollout"
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
// Shim's label and hash when hash is set, and its canary.
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
	}
	for k, v := range annotations {
		n.Annotations[k] = v
	}
	return n
}

func failedJob(op, hash, canary string, reason plan.Reason) *jobView {
	j := &batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue}}}}
	return &jobView{job: j, op: op, specHash: hash, canary: canary, resultRead: true,
		result: &plan.NodeResult{Outcome: plan.RolledBack, Reason: reason}}
}

// TestDecideRollout: the decision of one reconcile, from a snapshot alone
// (no API server, no client): which nodes start, and where the rollout
// stands.
func TestDecideRollout(t *testing.T) {
	shim := decideShim()
	hash := specHash(shim)
	canary := canaryHash(shim)
	otherUID := `{"shimUID":"uid-old","op":"install","specHash":"` + hash + `","reason":"Conflict","time":"2026-11-25T06:00:00Z"}`
	for _, tc := range []struct {
		name    string
		nodes   []*corev1.Node
		jobs    map[string]*jobView
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
			jobs: map[string]*jobView{"n1": failedJob(opInstall, hash, canary, plan.ReasonConflict)}, failed: []string{"n1"}, halted: true},
		{name: "a failed canary of another canary is tried again", nodes: []*corev1.Node{nodeAt("n1", "a", "", nil)},
			jobs: map[string]*jobView{"n1": failedJob(opInstall, hash, "older-canary", plan.ReasonCanaryFailed)}, start: []string{"n1"}},
		{name: "a failed canary of this canary halts", nodes: []*corev1.Node{nodeAt("n1", "a", "", nil)},
			jobs: map[string]*jobView{"n1": failedJob(opInstall, hash, canary, plan.ReasonCanaryFailed)}, failed: []string{"n1"}, halted: true},
		{name: "another Shim object's failure record does not halt",
			nodes: []*corev1.Node{nodeAt("n1", "a", "", map[string]string{nodelabel.FailureKey("spin"): otherUID})}, start: []string{"n1"}},
		{name: "a label another Shim object put is installed again",
			nodes: []*corev1.Node{nodeAt("n1", "a", hash, map[string]string{nodelabel.VerifiedKey("spin"): `{"shimUID":"uid-old","specHash":"` + hash + `","time":"2026-11-25T06:00:00Z"}`})},
			start: []string{"n1"}},
		{name: "control-plane nodes are left alone", nodes: []*corev1.Node{func() *corev1.Node {
			n := nodeAt("cp", "a", "", nil)
			n.Labels[controlPlaneLabel] = ""
			return n
		}()}, done: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := &observed{shim: shim, hash: hash, specHash: hash}
			if tc.refused {
				obs.refusal = &refusal{reason: v1alpha1.ReasonSignatureMissing, message: "no signature"}
			}
			for _, n := range tc.nodes {
				v := viewNode(shim, n, canary)
				v.job = tc.jobs[n.Name]
				obs.views = append(obs.views, v)
			}
			d, err := decideRollout(obs, (&Reconciler{}).planner(obs), Options{InstallerImage: "i", Namespace: "ns"}.withDefaults(), tc.shared)
			if err != nil {
				t.Fatal(err)
			}
			if !matchNames(d.rollin.Start, tc.start) || !matchNames(d.removal.Start, tc.remove) || !slices.Equal(d.rollin.Failed, tc.failed) ||
				d.rollin.Halted != tc.halted || d.done() != tc.done {
				t.Errorf("start %v remove %v failed %v halted %v done %v; want %v %v %v %v %v",
					d.rollin.Start, d.removal.Start, d.rollin.Failed, d.rollin.Halted, d.done(), tc.start, tc.remove, tc.failed, tc.halted, tc.done)
			}
			for _, name := range d.rollin.Start {
				if v := d.byName[name]; v.plan == nil || v.plan.Node != name || v.plan.SpecHash != hash {
					t.Errorf("node %s starts without its plan: %+v %v", name, v.plan, v.planErr)
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

// FuzzDecideRollout checks the decision's invariants on random snapshots:
// never more nodes changing than maxUpdate allows, never a failed node
// started again without a new spec (or, for a failed canary, a new
// canary), nothing installed while the spec is refused or the rollout
// halted, and never an uninstall of a node the Shim has nothing on (the
// shim's label, or a Job of its own changing it).
func FuzzDecideRollout(f *testing.F) {
	f.Add([]byte{3, 0, 0, 0, 0}, uint8(1), false)
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, uint8(2), false)
	f.Add([]byte{5, 5, 5, 9, 9, 0, 2, 2}, uint8(3), true)
	f.Add([]byte{7, 8, 1, 1, 1, 1, 1, 1, 1, 1, 6, 6, 6}, uint8(4), false)
	shim := decideShim()
	hash := specHash(shim)
	canary := canaryHash(shim)
	opts := Options{InstallerImage: "i", Namespace: "ns"}.withDefaults()
	f.Fuzz(func(t *testing.T, states []byte, maxUpdate uint8, refused bool) {
		if len(states) > 64 {
			states = states[:64]
		}
		s := shim.DeepCopy()
		mu := intstr.FromInt32(int32(maxUpdate%5) + 1)
		s.Spec.RolloutStrategy.Rolling.MaxUpdate = &mu
		obs := &observed{shim: s, hash: hash, specHash: hash}
		if refused {
			obs.refusal = &refusal{reason: v1alpha1.ReasonSignatureMissing, message: "no signature"}
		}
		for i, b := range states {
			obs.views = append(obs.views, randomView(s, fmt.Sprintf("n%02d", i), b, hash, canary))
		}
		d, err := decideRollout(obs, (&Reconciler{}).planner(obs), opts, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []rollout.Plan{d.rollin, d.removal} {
			if len(p.Start)+p.InFlight > max(p.Budget, p.InFlight) {
				t.Errorf("%d started with %d in flight, budget %d", len(p.Start), p.InFlight, p.Budget)
			}
			if p.Halted && len(p.Start) > 0 {
				t.Errorf("halted, yet %v start", p.Start)
			}
		}
		if refused && len(d.rollin.Start) > 0 {
			t.Errorf("refused, yet %v start", d.rollin.Start)
		}
		for _, name := range d.rollin.Start {
			v := d.byName[name]
			if j := v.job; j != nil && j.failed() && j.specHash == hash {
				if reason, _ := j.failure(); reason != string(plan.ReasonCanaryFailed) || j.canary == canary {
					t.Errorf("%s failed at this spec (%s) and starts again", name, reason)
				}
			}
			if f := v.failure; v.job == nil && f != nil && f.Op == opInstall && f.SpecHash == hash && (f.Reason != string(plan.ReasonCanaryFailed) || f.Canary == canary) {
				t.Errorf("%s's failure at this spec (%s) is not obeyed", name, f.Reason)
			}
			if !v.targeted() {
				t.Errorf("%s is not targeted and starts an install", name)
			}
		}
		for _, name := range d.removal.Start {
			if v := d.byName[name]; v.label == "" && (v.job == nil || !v.job.running()) {
				t.Errorf("%s has nothing of the Shim and is uninstalled", name)
			}
		}
	})
}

// randomView is a node in one of the states b picks: in or out of the
// pool, labelled at the spec, at another or not, with a Job running,
// failed (a Conflict, or its canary with this canary or another), or a
// failure record (this Shim's, or another Shim object's).
func randomView(shim *v1alpha1.Shim, name string, b byte, hash, canary string) nodeView {
	pool := "a"
	if b&1 == 1 {
		pool = "b"
	}
	installedAt := []string{"", hash, "old"}[int(b>>1)%3]
	var ann map[string]string
	switch (b >> 3) % 4 {
	case 1:
		ann = map[string]string{nodelabel.FailureKey("spin"): fmt.Sprintf(`{"shimUID":%q,"op":"install","specHash":%q,"reason":"Conflict","time":"2026-11-25T06:00:00Z"}`, shim.UID, hash)}
	case 2:
		ann = map[string]string{nodelabel.FailureKey("spin"): fmt.Sprintf(`{"shimUID":%q,"op":"install","specHash":%q,"reason":"CanaryFailed","canary":"older","time":"2026-11-25T06:00:00Z"}`, shim.UID, hash)}
	case 3:
		ann = map[string]string{nodelabel.FailureKey("spin"): fmt.Sprintf(`{"shimUID":"uid-old","op":"install","specHash":%q,"reason":"Conflict","time":"2026-11-25T06:00:00Z"}`, hash)}
	}
	v := viewNode(shim, nodeAt(name, pool, installedAt, ann), canary)
	switch (b >> 5) % 8 {
	case 1:
		v.job = &jobView{job: &batchv1.Job{}, op: opInstall, specHash: hash}
	case 2:
		v.job = failedJob(opInstall, hash, canary, plan.ReasonConflict)
	case 3:
		v.job = failedJob(opInstall, hash, canary, plan.ReasonCanaryFailed)
	case 4:
		v.job = failedJob(opInstall, hash, "older", plan.ReasonCanaryFailed)
	case 5:
		v.job = &jobView{job: &batchv1.Job{}, op: opUninstall, specHash: installedAt}
	case 6:
		v.job = failedJob(opInstall, "old", canary, plan.ReasonConflict)
	}
	return v
}

// TestDecideRemoval: a deleted Shim removes itself from the nodes that
// have it, maxUpdate at a time, whether they still match or not; a node
// whose install was refused (a failure record, no label) has nothing to
// uninstall.
func TestDecideRemoval(t *testing.T) {
	shim := decideShim()
	hash := specHash(shim)
	refused := map[string]string{nodelabel.FailureKey("spin"): `{"shimUID":"uid-spin","op":"install","specHash":"` + hash + `","reason":"Conflict","time":"2026-11-25T06:00:00Z"}`}
	obs := &observed{shim: shim, hash: hash, specHash: hash}
	for _, n := range []*corev1.Node{nodeAt("n1", "a", hash, nil), nodeAt("n2", "b", "old", nil), nodeAt("n3", "a", hash, nil), nodeAt("n4", "a", "", refused)} {
		obs.views = append(obs.views, viewNode(shim, n, canaryHash(shim)))
	}
	d, err := decideRemoval(obs, (&Reconciler{}).planner(obs))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.removal.Start) != 2 || slices.Contains(d.removal.Start, "n4") || d.removal.Remaining != 3 || len(d.rollin.Start) != 0 {
		t.Errorf("removal %+v, install %+v: want two of n1-n3 started (maxUpdate 2), three remaining, n4 left alone", d.removal, d.rollin)
	}
}
