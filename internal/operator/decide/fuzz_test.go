package decide

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/nodelabel/record"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/nodegate"
	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/runtimeclass"
)

// fuzzView is a node in the state b picks: labelled at the target, at an
// older spec or not; a Job of its own (an install that succeeded, failed
// or runs, an uninstall that succeeded, a verification done, a boot since
// its verification or none), a failure record, a predecessor's record, a
// new machine under its name, the startup taint.
func fuzzView(shim *v1alpha1.Shim, name string, b byte) NodeView {
	hash := []string{"", "h1", "h0", "h1"}[b&3]
	n := nodeAt(name, "a", hash, nil)
	if b&3 == 3 {
		// Declared by a node pool: the label (and a hash copied from
		// another node) with no record of an install.
		delete(n.Annotations, nodelabel.VerifiedKey("spin"))
	}
	if b&0x80 != 0 {
		n.Spec.Taints = []corev1.Taint{{Key: nodeview.PendingTaint, Effect: corev1.TaintEffectNoSchedule}}
	}
	if booted := (b >> 2) % 8; booted >= 6 && hash != "" && b&3 != 3 {
		// Verified in boot b1, now in b1 (the same) or b2 (booted since).
		n.Annotations[nodelabel.VerifiedKey("spin")] = `{"shimUID":"uid-spin","specHash":"` + hash + `","time":"2026-11-25T06:00:00Z","boot":"b1"}`
		n.Status.NodeInfo.BootID = []string{"b1", "b2"}[booted-6]
	}
	v := NodeViewOf(shim, n, "")
	job := func(op string, cond batchv1.JobConditionType, res *plan.NodeResult) *jobview.View {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "job-" + name, UID: types.UID("uid-job-" + name), Labels: map[string]string{jobview.LabelOp: op}}}
		if cond != "" {
			j.Status.Conditions = []batchv1.JobCondition{{Type: cond, Status: corev1.ConditionTrue}}
		}
		jv := jobview.ViewOf(j)
		jv.SpecHash, jv.Result, jv.ResultRead = "h1", res, res != nil
		return jv
	}
	switch (b >> 2) % 8 {
	case 1:
		v.Job = job(jobview.OpInstall, batchv1.JobComplete, &plan.NodeResult{Outcome: plan.Succeeded})
	case 2:
		v.Job = job(jobview.OpInstall, batchv1.JobFailed, &plan.NodeResult{Outcome: plan.RolledBack, Reason: plan.ReasonConflict})
	case 3:
		v.Job = job(jobview.OpInstall, "", nil)
	case 4:
		v.Job = job(jobview.OpUninstall, batchv1.JobComplete, &plan.NodeResult{Outcome: plan.Succeeded})
		if v.Label == "" {
			v.Label, v.SpecHash = LabelUninstalling, "h1"
		}
	case 5:
		v.Verify = job(jobview.OpVerify, batchv1.JobComplete, &plan.NodeResult{Outcome: plan.Succeeded, Drift: []string{"gone"}})
	}
	switch (b >> 5) % 4 {
	case 1:
		v.Failure = &nodelabel.Failure{ShimUID: shim.UID, Op: jobview.OpInstall, SpecHash: "h1", Reason: string(plan.ReasonConflict), Job: "job-old"}
	case 2:
		v.Stale = []string{"stale-record"}
	case 3:
		v.Reimaged = v.Label != ""
	}
	return v
}

// fuzzGate is a node gate view in which another Shim's installer holds
// every node whose state has bit 6 set, under a cap of 2 to 5 nodes
// (maxUpdate's high bits; 0: none).
func fuzzGate(states []byte, maxUpdate uint8) nodegate.View {
	g := nodegate.View{Shim: "spin", Max: int(maxUpdate>>4) % 5, Held: map[string]nodegate.Holder{}}
	if g.Max == 1 {
		g.Max = 0
	}
	for i, b := range states {
		if b&0x40 != 0 {
			g.Held[fmt.Sprintf("n%02d", i)] = nodegate.Holder{Shim: "other", Job: "other-job"}
		}
	}
	return g
}

// checkStarts: the plan starts a node only when the snapshot's gate
// admits it (no other Shim's installer there, the cap kept), never a node
// twice, each decided start admitted or waiting, and the snapshot's gate
// view as it was read.
func checkStarts(t *testing.T, obs *Snapshot, gate nodegate.View, p *Plan) {
	t.Helper()
	if !reflect.DeepEqual(gate, obs.Gate) {
		t.Errorf("the plan changed the snapshot's gate view")
	}
	held, seen := len(gate.Held), map[string]bool{}
	for _, st := range slices.Concat(p.Starts, p.Verify) {
		n := st.Reserve.Node
		if h, ok := gate.Held[n]; ok && h.Shim != "spin" {
			t.Errorf("node %s started while %s's installer holds it", n, h.Shim)
		}
		if _, ok := gate.Held[n]; !ok {
			held++
		}
		if seen[n] {
			t.Errorf("node %s started twice", n)
		}
		seen[n] = true
		if st.View == nil || st.View.Node.Name != n || st.Plan == nil {
			t.Errorf("start on %s without its view or plan", n)
		}
	}
	if gate.Max > 0 && held > gate.Max && len(p.Starts)+len(p.Verify) > 0 {
		t.Errorf("%d nodes held after the plan, cap %d", held, gate.Max)
	}
	refused := len(p.Decision.Rollin.Start)+len(p.Decision.Removal.Start) > len(p.Starts)
	if refused && p.Requeue > nodegate.Retry && p.Requeue != 0 {
		t.Errorf("a node waits for the gate, yet the Shim comes back after %s", p.Requeue)
	}
}

// checkVerifies: verifications only once the rollout is done, only of
// nodes installed at the target, the longest due first (a node booted
// since its verification before any other), and no node booted since left
// out while one that is not is verified (unless another Shim's installer
// holds it).
func checkVerifies(t *testing.T, obs *Snapshot, p *Plan) {
	t.Helper()
	if len(p.Verify) > 0 && !p.Decision.Done() {
		t.Errorf("verifications planned while the rollout goes on: %d", len(p.Verify))
	}
	var last time.Time
	for _, st := range p.Verify {
		v := st.View
		at, ok := v.VerifyDue(obs.Hash, time.Duration(0))
		if !ok || v.Label != nodelabel.Installed || v.SpecHash != obs.Hash {
			t.Errorf("node %s verified, not installed at the target", v.Node.Name)
		}
		if at.Before(last) {
			t.Errorf("node %s (due %s) after one due %s", v.Node.Name, at, last)
		}
		last = at
	}
	if len(p.Verify) == 0 {
		return
	}
	verified := map[string]bool{}
	for _, st := range p.Verify {
		verified[st.View.Node.Name] = true
	}
	for i := range obs.Views {
		v := &obs.Views[i]
		if _, held := obs.Gate.Held[v.Node.Name]; held {
			continue // another Shim's installer there: tried again soon
		}
		if _, ok := v.VerifyDue(obs.Hash, 0); ok && !verified[v.Node.Name] && v.Verified != nil && record.Rebooted(v.Verified.Boot, v.Node) {
			for _, st := range p.Verify {
				if f := st.View.Verified; f == nil || !record.Rebooted(f.Boot, st.View.Node) {
					t.Errorf("node %s verified before %s, booted since its verification", st.View.Node.Name, v.Node.Name)
				}
			}
		}
	}
}

// FuzzDecide checks, on random snapshots, the decisions a reconcile makes
// besides the rollout's (whose own invariants FuzzRollout checks) and the
// rollout they lead to:
//   - a Job is deleted, or a failure cleared, only on a failed node a new
//     retry request selects;
//   - a node is labelled installed only for an install Job of its own that
//     succeeded; a label or record removed only from a node that has some
//     of the Shim; a failure recorded only for a Job that failed;
//   - a running Job is ended only when its pod cannot pull;
//   - the startup taint goes only from a node installed at the target, by
//     the Shim (a label a node pool declared, with no record, is none);
//   - each node gets at most one label write per decision;
//   - no RuntimeClass written or deleted that is not the Shim's, but
//     for the takeover of one the runtime-class-manager Shim of the UID
//     read controls, with the Shim's handler (checkClasses);
//   - never a revert without a previous revision, never more nodes
//     changing than maxUpdate, reverts included.
func FuzzDecide(f *testing.F) {
	f.Add([]byte{0, 1, 4, 8, 12, 16, 20, 0x21, 0x42, 0x63, 0x85}, uint8(0), uint8(1))
	f.Add([]byte{9, 9, 9, 10, 10, 0x49, 0x89, 0xc5}, uint8(3), uint8(2))
	f.Add([]byte{0x88, 0x8d, 0x0d, 0x2d, 0x6d}, uint8(7), uint8(0))
	f.Fuzz(func(t *testing.T, states []byte, flags uint8, maxUpdate uint8) {
		if len(states) > 48 {
			states = states[:48]
		}
		shim := decideShim()
		mu := intstr.FromInt32(int32(maxUpdate%4) + 1)
		shim.Spec.RolloutStrategy.Rolling.MaxUpdate = &mu
		if flags&1 != 0 {
			shim.Annotations = map[string]string{v1alpha1.RetryAnnotation: "all@" + fmt.Sprint(flags)}
		}
		if flags&2 != 0 {
			shim.Spec.RolloutStrategy.OnFailure = v1alpha1.FailureRevert
		}
		if flags&4 != 0 {
			shim.Status.Revisions = []v1alpha1.Revision{{SpecHash: "h0"}}
		}
		if flags&8 != 0 {
			shim.Spec.FetchStrategy = v1alpha1.FetchStrategy{Type: v1alpha1.FetchImage, Image: &v1alpha1.OCIFetch{Reference: "example.invalid/spin:1"}}
		}
		obs := &Snapshot{Shim: shim, Hash: "h1", SpecHash: "h1", Shims: []v1alpha1.Shim{*shim}, RolloutNow: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
		if flags&8 != 0 {
			// An image rolled out is pinned (else its spec is refused).
			obs.Art = &v1alpha1.ResolvedArtifact{Digest: "sha256:" + strings.Repeat("ab", 32)}
		}
		before := map[string]NodeView{}
		for i, b := range states {
			v := fuzzView(shim, fmt.Sprintf("n%02d", i), b)
			before[v.Node.Name] = v
			obs.Views = append(obs.Views, v)
		}
		obs.Fresh = make([]bool, len(obs.Views))
		obs.Pulls = map[string]*plan.NodeResult{}
		for i, v := range obs.Views {
			if i%3 == 0 && v.Job != nil && v.Job.Running() {
				obs.Pulls[v.Node.Name] = &plan.NodeResult{Outcome: plan.Failed, Reason: plan.ReasonImagePullFailed}
			}
		}
		obs, records, err := Records(obs)
		if err != nil {
			t.Fatal(err)
		}
		obs.Classes = fuzzClasses(obs, flags, maxUpdate)
		obs.Gate = fuzzGate(states, maxUpdate)
		gateBefore := obs.Gate.Copy()
		p, err := PlanInstall(obs, records, Rules{Policy: Policy{Planner: shimspec.Planner(obs.Shim, obs.Hash), PlanFor: func(n *corev1.Node) (*plan.NodePlan, error) {
			return &plan.NodePlan{Node: n.Name, Operation: plan.OpInstall, SpecHash: "h1"}, nil
		}, Delivery: Delivery(obs)}, VerifyPeriod: time.Duration(flags>>4) * time.Hour, Resync: 10 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		d := p.Decision
		acts := slices.Concat(p.Records, p.Stale, p.Relabel, p.Taints)
		checkClasses(t, obs, p.Classes)
		checkVerifies(t, obs, p)
		checkStarts(t, obs, gateBefore, p)
		checkActions(t, obs, before, acts)
		if d.Delivered.Revert && obs.PreviousRevision() == nil {
			t.Errorf("a revert without a previous revision")
		}
		budget := mu.IntValue()
		if changing := len(d.Rollin.Start) + d.Rollin.InFlight; len(d.Rollin.Start) > 0 && changing > budget {
			t.Errorf("%d nodes changing (%d started), maxUpdate %d", changing, len(d.Rollin.Start), budget)
		}
	})
}

// checkActions checks each action against the node it writes, as it was
// before the decision.
func checkActions(t *testing.T, obs *Snapshot, before map[string]NodeView, acts []Action) {
	t.Helper()
	retry := obs.Shim.Annotations[v1alpha1.RetryAnnotation] != ""
	labelWrites := map[string]int{}
	var walk func([]Action)
	walk = func(acts []Action) {
		for _, a := range acts {
			switch a := a.(type) {
			case Together:
				walk(a)
			case InOrder:
				walk(a)
			case DeleteJob:
				if v := before[a.Node]; !retry || !v.FailedNode() {
					t.Errorf("Job of %s deleted without a retry of a failed node", a.Node)
				}
			case ClearFailure:
				if v := before[a.Node]; !retry || v.Failure == nil {
					t.Errorf("failure of %s cleared without a retry of a failure", a.Node)
				}
			case MarkInstalled:
				labelWrites[a.Node.Name]++
				v := before[a.Node.Name]
				if j := v.Job; !v.Preinstalled && (j == nil || j.Op != jobview.OpInstall || !j.Succeeded()) {
					t.Errorf("%s labelled installed without an install that succeeded", a.Node.Name)
				}
			case Unmark:
				labelWrites[a.Node]++
				if v := before[a.Node]; !v.HasRecords() && v.Label == "" {
					t.Errorf("%s unmarked with nothing of the Shim on it", a.Node)
				}
			case MarkFailed:
				if j := before[a.Node].Job; j == nil || !j.Failed() {
					t.Errorf("%s recorded as failed without a failed Job", a.Node)
				}
			case PatchJob:
				if obs.Pulls[a.Node] == nil {
					t.Errorf("Job of %s ended without a pull failure", a.Node)
				}
			case Untaint:
				v := before[a.Node.Name]
				if v.Label != nodelabel.Installed && (v.Job == nil || !v.Job.Succeeded()) {
					t.Errorf("taint of %s released before it has the shim", a.Node.Name)
				}
				if nodelabel.RecordsOf(v.Node, obs.Shim.Name, obs.Shim.UID).Verification == nil && (v.Job == nil || !v.Job.Succeeded()) {
					t.Errorf("taint of %s released on a label no Shim wrote", a.Node.Name)
				}
			}
		}
	}
	walk(acts)
	for node, n := range labelWrites {
		if n > 1 {
			t.Errorf("%s: %d label writes in one decision", node, n)
		}
	}
}

// fuzzClasses gives the Shim's RuntimeClass and its canary's a state each
// from the high bits of flags and maxUpdate (absent, the Shim's, someone
// else's, another Shim object's of the name, runtime-class-manager's of
// the handler, of another handler, of another UID, the Shim's being
// deleted), and with bit 5 of maxUpdate a class of the Shim's the spec no
// longer names.
func fuzzClasses(obs *Snapshot, flags, maxUpdate uint8) *ClassSet {
	shim := obs.Shim
	if flags&0x80 != 0 {
		shim.Spec.MigrateFrom = &v1alpha1.MigrateFrom{RuntimeClassManager: v1alpha1.RuntimeClassManagerShim{Shim: shim.Spec.RuntimeClass.HandlerName()}}
	}
	obs.RCMUID = "rcm-uid"
	set := &ClassSet{}
	primary := shimspec.Classes(shim)[0]
	set.Put(primary.Name, fuzzClass(shim, primary, (flags>>4)&7))
	if c, ok := shimspec.CanaryClass(shim); ok {
		set.Put(c.Name, fuzzClass(shim, c, (maxUpdate>>2)&7))
	}
	if maxUpdate&0x20 != 0 {
		old := runtimeclass.Build(primary.Spec)
		old.Name = "dropped-from-spec"
		set.Put(old.Name, old)
	}
	return set
}

func fuzzClass(shim *v1alpha1.Shim, c shimspec.Class, state uint8) *nodev1.RuntimeClass {
	rcm := func(handler string, uid types.UID) *nodev1.RuntimeClass {
		return &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: c.Name, ResourceVersion: "3", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: v1alpha1.RCMGroup + "/v1alpha1", Kind: "Shim", Name: shim.Spec.RuntimeClass.HandlerName(), UID: uid, Controller: new(true)}}}, Handler: handler}
	}
	switch state {
	case 1, 7:
		rc := runtimeclass.Build(c.Spec)
		rc.ResourceVersion = "3"
		if state == 7 {
			rc.DeletionTimestamp = &metav1.Time{}
		}
		return rc
	case 2:
		return &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: c.Name, ResourceVersion: "3"}, Handler: c.Handler}
	case 3:
		rc := runtimeclass.Build(c.Spec)
		rc.OwnerReferences[0].UID = "an-earlier-shim"
		return rc
	case 4:
		return rcm(c.Handler, "rcm-uid")
	case 5:
		return rcm("another-handler", "rcm-uid")
	case 6:
		return rcm(c.Handler, "another-uid")
	}
	return nil
}

// checkClasses: nothing written or deleted that is not the Shim's, but
// for a takeover from the runtime-class-manager Shim of the UID read, of
// the Shim's handler; a blocked canary is someone else's class.
func checkClasses(t *testing.T, obs *Snapshot, p ClassPlan) {
	t.Helper()
	for _, e := range p.Ensures {
		if r := e.Step.Read; e.Step.Write != nil && r != nil && !shimspec.OwnedBy(r, obs.Shim) && !taken(p, r.Name) {
			t.Errorf("RuntimeClass %s written (%s), but it is not the Shim's", r.Name, e.Step.Result)
		}
	}
	for _, d := range p.Deletes {
		if !shimspec.OwnedBy(d.Class, obs.Shim) {
			t.Errorf("RuntimeClass %s deleted, but it is not the Shim's", d.Class.Name)
		}
	}
	for _, tk := range p.Takeovers {
		r, from := tk.Step.Read, tk.Step.From
		if obs.Shim.Spec.MigrateFrom == nil || !from.Controls(r) || from.UID != obs.RCMUID || r.Handler != tk.Spec.Handler {
			t.Errorf("RuntimeClass %s taken over from %s, which does not hold it with the handler %s", r.Name, from, tk.Spec.Handler)
		}
	}
	if c, ok := shimspec.CanaryClass(obs.Shim); p.CanaryBlocked && ok {
		if rc, _ := obs.Classes.Read(c.Name); rc == nil || shimspec.OwnedBy(rc, obs.Shim) {
			t.Error("the canary blocked by a RuntimeClass that is not someone else's")
		}
	}
}

func taken(p ClassPlan, name string) bool {
	for _, tk := range p.Takeovers {
		if tk.Spec.Name == name {
			return true
		}
	}
	return false
}
