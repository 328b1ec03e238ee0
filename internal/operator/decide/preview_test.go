package decide

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// previewFleet is a random fleet of a Shim mid-rollout, from the fuzzer's
// bytes: node states (fuzzView: installed, older, Jobs that ran, failed
// or run, records, taints), and rollout rules from flags: staged steps at
// a recorded step, baking or not; a maintenance window open or shut; a
// pause; a recorded halt; a retry request; a revert policy with a
// previous revision; a read-only host; a node of another runtime; another
// Shim whose installs share nodes.
func previewFleet(states []byte, flags uint16, maxUpdate uint8) (*Snapshot, Rules) {
	shim := decideShim()
	mu := intstr.FromInt32(int32(maxUpdate%4) + 1)
	rs := shim.Spec.RolloutStrategy
	rs.Rolling.MaxUpdate = &mu
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	st := &v1alpha1.RolloutStatus{SpecHash: "h1", StartedAt: metav1.NewTime(now.Add(-time.Hour))}
	if flags&1 != 0 {
		bake := metav1.Duration{Duration: 30 * time.Minute}
		rs.Steps = []v1alpha1.RolloutStep{{Nodes: intstr.FromInt32(1), Bake: &bake}, {Nodes: intstr.FromString("50%"), Bake: &bake}, {Nodes: intstr.FromString("100%")}}
		st.Steps, st.Step = 3, int32(flags>>1&1)
		if flags&4 != 0 {
			st.BakeUntil = &metav1.Time{Time: now.Add(10 * time.Minute)}
		}
	}
	if flags&8 != 0 {
		start, end := "11:00", "13:00"
		if flags&16 != 0 {
			start, end = "20:00", "22:00"
		}
		rs.Windows = []v1alpha1.MaintenanceWindow{{Start: start, End: end, TimeZone: "UTC"}}
	}
	rs.Paused = flags&32 != 0
	if flags&64 != 0 {
		st.Halt = &v1alpha1.RolloutHalt{Reason: v1alpha1.ReasonWorkloadFailures, Message: "3 pods failing", Time: metav1.NewTime(now.Add(-time.Minute))}
	}
	if flags&128 != 0 {
		shim.Annotations = map[string]string{v1alpha1.RetryAnnotation: fmt.Sprint("all@", flags)}
	}
	if flags&256 != 0 {
		rs.OnFailure = v1alpha1.FailureRevert
		shim.Status.Revisions = []v1alpha1.Revision{{SpecHash: "h0"}}
	}
	shim.Status.Rollout = st
	obs := &Snapshot{Shim: shim, Hash: "h1", SpecHash: "h1", Now: now, RolloutNow: now, Shims: []v1alpha1.Shim{*shim}, Classes: &ClassSet{}}
	obs.Windows, obs.Steps, _ = shimspec.RolloutRules(shim)
	shared := map[string]bool{}
	for i, b := range states {
		v := fuzzView(shim, fmt.Sprintf("n%02d", i), b)
		switch {
		case flags&512 != 0 && i%5 == 1:
			v.Skip = &nodeview.Skip{Reason: v1alpha1.SkipReadOnlyHost, Detail: "/usr is read-only"}
		case flags&1024 != 0 && i%7 == 2:
			v.Skip = &nodeview.Skip{Reason: v1alpha1.SkipRuntimeNotSupported, Detail: "cri-o"}
		}
		if flags&2048 != 0 && i%3 == 0 {
			shared[v.Node.Name] = true
		}
		obs.Views = append(obs.Views, v)
	}
	obs.Fresh = make([]bool, len(obs.Views))
	r := Rules{Policy: Policy{Planner: shimspec.Planner(obs.Shim, obs.Hash), Shared: shared, PlanFor: func(n *corev1.Node) (*plan.NodePlan, error) {
		return &plan.NodePlan{Node: n.Name, Operation: plan.OpInstall, SpecHash: "h1"}, nil
	}}, VerifyPeriod: -1}
	return obs, r
}

// FuzzPreviewIsThePlan: on random fleets mid-rollout, the preview's first
// wave (kubectl shimkit plan) starts exactly the Jobs the reconcile's plan
// starts, for the same snapshot and rules, and a preview's plan is that
// plan.
func FuzzPreviewIsThePlan(f *testing.F) {
	f.Add([]byte{0, 1, 4, 8, 12, 16, 20, 0x21, 0x42, 0x63, 0x85}, uint16(0), uint8(1))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 9, 9}, uint16(1|4), uint8(0))
	f.Add([]byte{0, 2, 0, 2, 0, 2, 0x88}, uint16(1|2|8), uint8(2))
	f.Add([]byte{0, 0, 0, 0, 0x0d, 0x2d}, uint16(8|16), uint8(3))
	f.Add([]byte{8, 8, 0, 0, 0, 0}, uint16(64|128|256), uint8(1))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, uint16(512|1024|2048), uint8(2))
	f.Add([]byte{1, 2, 3, 0, 0}, uint16(32), uint8(0))
	f.Fuzz(func(t *testing.T, states []byte, flags uint16, maxUpdate uint8) {
		if len(states) > 40 {
			states = states[:40]
		}
		previewObs, rules := previewFleet(states, flags, maxUpdate)
		p, sim, err := Preview(previewObs, rules)
		if err != nil {
			t.Fatal(err)
		}
		// As a reconcile plans: the delivery rules of the snapshot as the
		// records leave it (a new retry lifts a halt).
		planObs, planRules := previewFleet(states, flags, maxUpdate)
		planObs, records, err := Records(planObs)
		if err != nil {
			t.Fatal(err)
		}
		planRules.Policy.Delivery = Delivery(planObs)
		want, err := PlanInstall(planObs, records, planRules)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			what      string
			got, want []string
		}{
			{"installs", sim.First.Rollin.Start, want.Decision.Rollin.Start},
			{"removals", sim.First.Removal.Start, want.Decision.Removal.Start},
			{"the preview's plan's installs", p.Decision.Rollin.Start, want.Decision.Rollin.Start},
		} {
			if !slices.Equal(sorted(c.got), sorted(c.want)) {
				t.Errorf("%s: the preview starts %v, the plan %v", c.what, c.got, c.want)
			}
		}
		if len(sim.Waves) > 0 && sim.Waves[0].At.Equal(previewObs.Now) && !sim.Waves[0].AfterRunning {
			if w := sim.Waves[0]; !slices.Equal(sorted(w.Install), sorted(slices.Concat(want.Decision.Rollin.Start, labelled(want)))) {
				t.Errorf("first wave installs %v, the plan starts %v", w.Install, want.Decision.Rollin.Start)
			}
		}
		if sim.First.Delivered.Hold != want.Decision.Delivered.Hold {
			t.Errorf("the preview holds %q, the plan %q", sim.First.Delivered.Hold, want.Decision.Delivered.Hold)
		}
	})
}

// labelled are the nodes the plan labels without a Job (their image has
// the shim): a wave lists them with the installs.
func labelled(p *Plan) []string {
	var out []string
	for _, a := range p.Relabel {
		if w, ok := a.(Together); ok {
			for _, one := range w {
				if m, ok := one.(MarkInstalled); ok {
					out = append(out, m.Node.Name)
				}
			}
		}
	}
	return out
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }
