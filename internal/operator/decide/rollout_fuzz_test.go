package decide_test

import (
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/nodelabel/record"
	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/rollout"
)

// FuzzRollout checks the rollout's decision (Decide) on random
// snapshots: never more nodes changing than maxUpdate allows, never a
// failed node started again without a new spec (or, for a failed canary,
// a new canary), nothing installed while the spec is refused or the
// rollout halted, and never an uninstall of a node the Shim has nothing
// on (the shim's label, or a Job of its own changing it); and the
// delivery rules (rules picks them): nothing starts while paused or
// halted by the gate, outside a window only fresh or forced nodes, and no
// more nodes towards the target than the current step allows.
func FuzzRollout(f *testing.F) {
	f.Add([]byte{3, 0, 0, 0, 0}, uint8(1), false, uint8(0))
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, uint8(2), false, uint8(1))
	f.Add([]byte{5, 5, 5, 9, 9, 0, 2, 2}, uint8(3), true, uint8(2))
	f.Add([]byte{7, 8, 1, 1, 1, 1, 1, 1, 1, 1, 6, 6, 6}, uint8(4), false, uint8(4))
	f.Add([]byte{0x60, 0x61, 0xe0, 0x18, 0x10, 0x08}, uint8(0), false, uint8(8))
	f.Add([]byte{0, 2, 4, 6, 8, 10, 12, 14}, uint8(4), false, uint8(16))
	f.Fuzz(func(t *testing.T, states []byte, maxUpdate uint8, refused bool, rules uint8) {
		if len(states) > 64 {
			states = states[:64]
		}
		mu := intstr.FromInt32(int32(maxUpdate%5) + 1)
		planner := rollout.Planner{Strategy: rollout.Strategy{MaxUpdate: &mu}, ShimUID: "uid-spin", SpecHash: target}
		snap := &decide.Snapshot{Hash: target, Refusal: refusal(refused)}
		for i, b := range states {
			v := randomView(fmt.Sprintf("n%02d", i), b)
			v.Fresh, v.Forced, v.Preinstalled = i%5 == 1, i%7 == 3, i%6 == 5
			snap.Views = append(snap.Views, v)
		}
		dl := randomDelivery(rules)
		d, err := decide.Decide(snap, decide.Policy{Planner: planner, PlanFor: installPlan, Delivery: dl})
		if err != nil {
			t.Fatal(err)
		}
		checkDelivery(t, snap, dl, d)
		for _, name := range append(append([]string(nil), d.Rollin.Start...), d.Removal.Start...) {
			if d.ByName[name].Preinstalled {
				t.Errorf("%s's image has the shim, yet a Job starts there", name)
			}
		}
		for _, p := range []rollout.Plan{d.Rollin, d.Removal} {
			if len(p.Start)+p.InFlight > max(p.Budget, p.InFlight) {
				t.Errorf("%d started with %d in flight, budget %d", len(p.Start), p.InFlight, p.Budget)
			}
			if p.Halted && len(p.Start) > 0 {
				t.Errorf("halted, yet %v start", p.Start)
			}
		}
		if refused && len(d.Rollin.Start) > 0 {
			t.Errorf("refused, yet %v start", d.Rollin.Start)
		}
		for _, name := range d.Rollin.Start {
			v := d.ByName[name]
			if j := v.Job; j != nil && j.Failed() && j.SpecHash == target {
				if reason, _ := j.Failure(); reason != string(plan.ReasonCanaryFailed) || j.Canary == canary {
					t.Errorf("%s failed at this spec (%s) and starts again", name, reason)
				}
			}
			if f := v.Failure; v.Job == nil && f != nil && f.Op == jobview.OpInstall && f.SpecHash == target && (f.Reason != string(plan.ReasonCanaryFailed) || f.Canary == canary) {
				t.Errorf("%s's failure at this spec (%s) is not obeyed", name, f.Reason)
			}
			if !v.Targeted() {
				t.Errorf("%s is not targeted and starts an install", name)
			}
			if v.Plan == nil || v.Plan.Node != name {
				t.Errorf("%s starts without its plan", name)
			}
		}
		for _, name := range d.Removal.Start {
			if v := d.ByName[name]; v.Label == "" && (v.Job == nil || !v.Job.Running()) {
				t.Errorf("%s has nothing of the Shim and is uninstalled", name)
			}
		}
	})
}

// randomView is a node in one of the states b picks: targeted or not,
// labelled at the target, at another spec or not, with a Job running,
// failed (a Conflict, or its canary with this canary or another), or a
// failure record (a Conflict, or a canary of before).
func randomView(name string, b byte) decide.NodeView {
	v := node(name, []string{"", target, "old"}[int(b>>1)%3])
	v.Matching = b&1 == 0
	switch (b >> 3) % 4 {
	case 1:
		v.Failure = &record.Failure{ShimUID: "uid-spin", Op: jobview.OpInstall, SpecHash: target, Reason: string(plan.ReasonConflict)}
	case 2:
		v.Failure = &record.Failure{ShimUID: "uid-spin", Op: jobview.OpInstall, SpecHash: target, Reason: string(plan.ReasonCanaryFailed), Canary: "older"}
	case 3:
		v.Stale = []string{record.FailureKey("spin")} // a predecessor's: not the Shim's failure
	}
	failed := func(at, ran string, reason plan.Reason) *jobview.View {
		j := job(jobview.OpInstall, at, batchv1.JobFailed, rolledBack(reason))
		j.Canary = ran
		return j
	}
	switch (b >> 5) % 8 {
	case 1:
		v.Job = job(jobview.OpInstall, target, "", nil)
	case 2:
		v.Job = failed(target, canary, plan.ReasonConflict)
	case 3:
		v.Job = failed(target, canary, plan.ReasonCanaryFailed)
	case 4:
		v.Job = failed(target, "older", plan.ReasonCanaryFailed)
	case 5:
		v.Job = job(jobview.OpUninstall, v.SpecHash, "", nil)
	case 6:
		v.Job = failed("old", canary, plan.ReasonConflict)
	case 7:
		v.Held = true
	}
	return v
}

// randomDelivery picks delivery rules from the bits of b: paused, a
// closed window, a gate trip, and steps (a one-node first step, baking or
// not).
func randomDelivery(b uint8) decide.DeliveryRules {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	dl := decide.DeliveryRules{Now: now, Paused: b&1 != 0}
	if b&2 != 0 {
		w, _ := rollout.ParseWindow(nil, "22:00", "04:00", "")
		dl.Windows = rollout.Windows{w}
	}
	if b&4 != 0 {
		dl.Gate = &decide.Trip{Reason: "WorkloadFailures", Message: "pods fail"}
	}
	if b&8 != 0 {
		dl.Steps = rollout.Steps{{Nodes: intstr.FromInt32(1), Bake: time.Hour}, {Nodes: intstr.FromString("50%")}}
	}
	if b&16 != 0 {
		dl.Stage.BakeUntil = now.Add(time.Minute)
	}
	return dl
}

// checkDelivery checks the delivery rules' invariants on a decision.
func checkDelivery(t *testing.T, s *decide.Snapshot, dl decide.DeliveryRules, d decide.Decision) {
	t.Helper()
	starts := append(append([]string(nil), d.Rollin.Start...), d.Removal.Start...)
	if dl.Paused && len(starts) > 0 {
		t.Errorf("paused, yet %v start", starts)
	}
	if dl.Gate != nil && len(d.Rollin.Start) > 0 {
		t.Errorf("the gate tripped, yet %v start", d.Rollin.Start)
	}
	if open, _ := dl.Windows.Open(dl.Now); !open {
		for _, n := range starts {
			if v := d.ByName[n]; !v.Fresh && !v.Forced {
				t.Errorf("window closed, yet %s (running workloads) starts", n)
			}
		}
	}
	if len(dl.Steps) > 0 && d.Delivered.Stage.Step == 0 {
		total, toward := 0, len(d.Rollin.Start)
		for _, v := range s.Views {
			if v.Targeted() {
				total++
				if v.Label == record.Installed && v.SpecHash == s.Hash && v.Drifted == "" {
					toward++
				}
			}
		}
		if want, _ := dl.Steps[0].Count(total); len(d.Rollin.Start) > 0 && toward+d.Rollin.InFlight > max(want, d.Rollin.InFlight) {
			t.Errorf("step 1 allows %d of %d nodes, yet %d updated, %d in flight and %v start", want, total, toward-len(d.Rollin.Start), d.Rollin.InFlight, d.Rollin.Start)
		}
	}
}
