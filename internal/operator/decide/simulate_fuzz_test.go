package decide_test

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/rollout"
)

// FuzzSimulate checks kubectl shimkit plan's simulation on random
// snapshots: it ends; its first wave is what Decide decides now; no wave
// starts more nodes than maxUpdate (or those Jobs running would leave
// room for); a node is installed at most once and uninstalled at most
// once; nothing is installed while the spec is refused; a wave never
// starts before the one before it; and when it runs to the end, every
// targeted node that is not failed has the target and every untargeted
// one nothing.
func FuzzSimulate(f *testing.F) {
	f.Add([]byte{3, 0, 0, 0, 0}, uint8(1), false, uint8(0))
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, uint8(2), false, uint8(1))
	f.Add([]byte{5, 5, 5, 9, 9, 0, 2, 2}, uint8(3), true, uint8(2))
	f.Add([]byte{0, 2, 4, 6, 8, 10, 12, 14}, uint8(4), false, uint8(16))
	f.Fuzz(func(t *testing.T, states []byte, maxUpdate uint8, refused bool, rules uint8) {
		if len(states) > 48 {
			states = states[:48]
		}
		budget := int(maxUpdate%5) + 1
		mu := intstr.FromInt32(int32(budget))
		planner := rollout.Planner{Strategy: rollout.Strategy{MaxUpdate: &mu}, ShimUID: "uid-spin", SpecHash: target}
		var nodes, again []decide.NodeView
		for i, b := range states {
			v := randomView(fmt.Sprintf("n%02d", i), b)
			v.Fresh, v.Forced = i%5 == 1, i%7 == 3
			nodes = append(nodes, v)
			again = append(again, v)
		}
		dl := randomDelivery(rules)
		policy := decide.Policy{Planner: planner, PlanFor: installPlan, Delivery: dl}
		sim, err := decide.Simulate(&decide.Snapshot{Hash: target, Refusal: refusal(refused), Views: nodes}, policy)
		if err != nil {
			t.Fatal(err)
		}
		now, err := decide.Decide(&decide.Snapshot{Hash: target, Refusal: refusal(refused), Views: again}, policy)
		if err != nil {
			t.Fatal(err)
		}
		starts := len(now.Rollin.Start) + len(now.Label) + len(now.Removal.Start) + len(now.Unlabel)
		switch {
		case starts > 0 && (len(sim.Waves) == 0 || sim.Waves[0].AfterRunning || !sim.Waves[0].At.Equal(dl.Now)):
			t.Errorf("Decide starts %v (and labels %v) now; the simulation's waves %+v", now.Rollin.Start, now.Label, sim.Waves)
		case starts > 0 && fmt.Sprint(sim.Waves[0].Install) != fmt.Sprint(append(append([]string(nil), now.Rollin.Start...), now.Label...)):
			t.Errorf("first wave installs %v, Decide starts %v (and labels %v)", sim.Waves[0].Install, now.Rollin.Start, now.Label)
		case starts == 0 && len(sim.Waves) > 0 && !sim.Waves[0].AfterRunning && sim.Waves[0].At.Equal(dl.Now):
			t.Errorf("Decide starts nothing now; the first wave %+v starts now", sim.Waves[0])
		}
		installed, removed := map[string]int{}, map[string]int{}
		for i, w := range sim.Waves {
			if i > 0 && w.At.Before(sim.Waves[i-1].At) {
				t.Errorf("wave %d at %v, before wave %d at %v", i+1, w.At, i, sim.Waves[i-1].At)
			}
			jobs := 0
			for _, n := range w.Install {
				installed[n]++
				if !nodes[index(n)].Preinstalled {
					jobs++
				}
			}
			if jobs > budget && jobs > 0 {
				t.Errorf("wave %d starts %d installs, maxUpdate %d", i+1, jobs, budget)
			}
			for _, n := range w.Remove {
				removed[n]++
			}
			if refused && len(w.Install) > 0 {
				for _, n := range w.Install {
					if !nodes[index(n)].Preinstalled {
						t.Errorf("refused, yet wave %d installs %s", i+1, n)
					}
				}
			}
		}
		for n, c := range installed {
			if c > 1 {
				t.Errorf("%s installed %d times", n, c)
			}
		}
		for n, c := range removed {
			if c > 1 {
				t.Errorf("%s uninstalled %d times", n, c)
			}
		}
		if sim.Stopped == decide.HoldNone && len(sim.Waves) < decide.MaxWaves && !refused {
			for _, v := range sim.End {
				if v.Targeted() && !v.Preinstalled && v.State(target, false) != rollout.Failed && (v.Label == "" || v.SpecHash != target) {
					t.Errorf("the simulation ended, yet targeted %s is at %q (%s)", v.Node.Name, v.SpecHash, v.State(target, false))
				}
			}
		}
	})
}

// index is the position of node nNN in the fuzzed snapshot.
func index(name string) int {
	var i int
	fmt.Sscanf(name, "n%02d", &i)
	return i
}
