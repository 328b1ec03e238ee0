package rollout_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/shimkit/shimkit/rollout"
)

func maxUpdate(s string) *intstr.IntOrString { v := intstr.Parse(s); return &v }

func nodes(n int, state rollout.State, hash string) []rollout.Node {
	out := make([]rollout.Node, n)
	for i := range out {
		out[i] = rollout.Node{Name: fmt.Sprintf("node-%03d", i), UID: fmt.Sprintf("uid-%d", i), State: state, SpecHash: hash}
	}
	return out
}

func TestBudget(t *testing.T) {
	tests := []struct {
		strategy rollout.Strategy
		total    int
		want     int
	}{
		{rollout.Strategy{}, 50, 1},
		{rollout.Strategy{MaxUpdate: maxUpdate("3")}, 50, 3},
		{rollout.Strategy{MaxUpdate: maxUpdate("3")}, 2, 2},
		{rollout.Strategy{MaxUpdate: maxUpdate("10%")}, 50, 5},
		{rollout.Strategy{MaxUpdate: maxUpdate("10%")}, 51, 6}, // rounds up, like maxUnavailable
		{rollout.Strategy{MaxUpdate: maxUpdate("10%")}, 3, 1},  // at least one
		{rollout.Strategy{MaxUpdate: maxUpdate("1%")}, 1000, 10},
		{rollout.Strategy{MaxUpdate: maxUpdate("100%")}, 7, 7},
		{rollout.Strategy{Recreate: true, MaxUpdate: maxUpdate("1")}, 9, 9},
		{rollout.Strategy{MaxUpdate: maxUpdate("10%")}, 0, 0},
	}
	for _, tt := range tests {
		got, err := tt.strategy.Budget(tt.total)
		if err != nil || got != tt.want {
			t.Errorf("Budget(%v, %d) = %d, %v; want %d", tt.strategy.MaxUpdate, tt.total, got, err, tt.want)
		}
	}
	for _, bad := range []string{"0", "0%", "101%", "x%"} {
		if _, err := (rollout.Strategy{MaxUpdate: maxUpdate(bad)}).Budget(10); err == nil {
			t.Errorf("maxUpdate %q accepted", bad)
		}
	}
}

func TestPlanInstall(t *testing.T) {
	p := rollout.Planner{Strategy: rollout.Strategy{MaxUpdate: maxUpdate("2")}, ShimUID: "shim", SpecHash: "v2"}
	tests := []struct {
		name      string
		nodes     []rollout.Node
		start     int
		halted    bool
		done      bool
		remaining int
	}{
		{"fresh install starts maxUpdate nodes", nodes(5, rollout.Absent, ""), 2, false, false, 5},
		{"in-flight nodes count against maxUpdate", append(nodes(3, rollout.Absent, ""), rollout.Node{Name: "busy", State: rollout.Installing, SpecHash: "v2"}), 1, false, false, 4},
		{"budget full", append(nodes(3, rollout.Absent, ""), rollout.Node{Name: "a", State: rollout.Installing}, rollout.Node{Name: "b", State: rollout.Uninstalling}), 0, false, false, 5},
		{"an upgrade is installed at the old hash", nodes(4, rollout.Installed, "v1"), 2, false, false, 4},
		{"all at the spec: done", nodes(4, rollout.Installed, "v2"), 0, false, true, 0},
		{"a failure at this spec halts", append(nodes(4, rollout.Absent, ""), rollout.Node{Name: "bad", State: rollout.Failed, SpecHash: "v2"}), 0, true, false, 5},
		{"a failure at an older spec does not halt", append(nodes(4, rollout.Absent, ""), rollout.Node{Name: "old", State: rollout.Failed, SpecHash: "v1"}), 2, false, false, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := p.Install(tt.nodes)
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Start) != tt.start || plan.Halted != tt.halted || plan.Done != tt.done || plan.Remaining != tt.remaining {
				t.Errorf("plan = %+v; want start %d halted %v done %v remaining %d", plan, tt.start, tt.halted, tt.done, tt.remaining)
			}
		})
	}
}

func TestPlanRemove(t *testing.T) {
	p := rollout.Planner{Strategy: rollout.Strategy{MaxUpdate: maxUpdate("50%")}, ShimUID: "shim", SpecHash: "v1"}
	ns := append(nodes(4, rollout.Installed, "v1"), rollout.Node{Name: "gone", State: rollout.Absent})
	plan, err := p.Remove(ns)
	if err != nil || len(plan.Start) != 3 || plan.Done {
		t.Errorf("remove plan = %+v %v; want 3 of 5 (50%% rounded up)", plan, err)
	}
	plan, _ = p.Remove(append(ns, rollout.Node{Name: "stuck", State: rollout.Failed}))
	if !plan.Halted || len(plan.Start) != 0 || !slices.Equal(plan.Failed, []string{"stuck"}) {
		t.Errorf("a failed uninstall must halt: %+v", plan)
	}
	if plan, _ := p.Remove(nodes(3, rollout.Absent, "")); !plan.Done {
		t.Errorf("all absent: %+v", plan)
	}
}

// TestHeldNodesWait: a held node is not started and keeps the plan from
// being done, but takes no budget: the other nodes go on.
func TestHeldNodesWait(t *testing.T) {
	p := rollout.Planner{ShimUID: "shim", SpecHash: "v1"}
	ns := []rollout.Node{{Name: "busy", State: rollout.Installed, SpecHash: "v1", Held: true, Priority: 9}, {Name: "free", State: rollout.Installed, SpecHash: "v1"}}
	plan, err := p.Remove(ns)
	if err != nil || !slices.Equal(plan.Start, []string{"free"}) || plan.Done || plan.Remaining != 2 || !slices.Equal(plan.Held, []string{"busy"}) {
		t.Errorf("remove with a held node: %+v %v; want free started, busy held", plan, err)
	}
	ns[1].State = rollout.Absent
	if plan, _ := p.Remove(ns); plan.Done || len(plan.Start) != 0 || plan.Remaining != 1 || plan.InFlight != 0 {
		t.Errorf("only the held node left: %+v; want it waiting, not done", plan)
	}
	ns[0].Held = false
	if plan, _ := p.Remove(ns); !slices.Equal(plan.Start, []string{"busy"}) {
		t.Errorf("released: %+v", plan)
	}
}

// TestRetriedStartsWhileHalted: a node an admin retried starts within
// the budget while another failed node halts the rollout; the others
// wait, and the plan stays halted.
func TestRetriedStartsWhileHalted(t *testing.T) {
	p := rollout.Planner{Strategy: rollout.Strategy{MaxUpdate: maxUpdate("2")}, ShimUID: "shim", SpecHash: "v2"}
	ns := []rollout.Node{
		{Name: "failed", State: rollout.Failed, SpecHash: "v2"},
		{Name: "retried", State: rollout.Installed, SpecHash: "v1", Retried: true},
		{Name: "waiting", State: rollout.Installed, SpecHash: "v1"},
	}
	plan, err := p.Install(ns)
	if err != nil || !plan.Halted || !slices.Equal(plan.Start, []string{"retried"}) || !slices.Equal(plan.Failed, []string{"failed"}) {
		t.Errorf("halted with a retried node: %+v %v; want retried started alone", plan, err)
	}
	ns[1].Retried = false
	if plan, _ := p.Install(ns); len(plan.Start) != 0 {
		t.Errorf("halted, nothing retried: %+v; want nothing started", plan)
	}
	ns[1].Retried = true
	p.Strategy.MaxUpdate = maxUpdate("1")
	ns = append(ns, rollout.Node{Name: "busy", State: rollout.Installing, SpecHash: "v2"})
	if plan, _ := p.Install(ns); len(plan.Start) != 0 {
		t.Errorf("no budget left: %+v; want the retried node waiting", plan)
	}
}

// TestOrderIsDeterministicButSpread: the same inputs give the same order;
// another shim or spec gives another.
func TestOrderIsDeterministicButSpread(t *testing.T) {
	ns := nodes(100, rollout.Absent, "")
	plan := func(shim, hash string) []string {
		p := rollout.Planner{Strategy: rollout.Strategy{MaxUpdate: maxUpdate("10")}, ShimUID: shim, SpecHash: hash}
		rng := rand.New(rand.NewPCG(uint64(len(shim)), 7))
		shuffled := slices.Clone(ns)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		pl, err := p.Install(shuffled)
		if err != nil {
			t.Fatal(err)
		}
		return pl.Start
	}
	a := plan("shim-a", "h1")
	if !slices.Equal(a, plan("shim-a", "h1")) {
		t.Error("same inputs, different order")
	}
	if slices.Equal(a, plan("shim-b", "h1")) || slices.Equal(a, plan("shim-a", "h2")) {
		t.Error("order does not depend on the shim and the spec")
	}
	if slices.Equal(a, []string{"node-000", "node-001", "node-002", "node-003", "node-004", "node-005", "node-006", "node-007", "node-008", "node-009"}) {
		t.Error("order is by name, not spread")
	}
}

// TestPropertyRandomClusters simulates rollouts on random clusters, with
// nodes finishing in random order: the number of nodes in flight never
// exceeds maxUpdate, and every rollout without failures converges; with a
// failure it halts and starts nothing more.
func TestPropertyRandomClusters(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 1))
	for trial := range 300 {
		total := 1 + rng.IntN(200)
		var strategy rollout.Strategy
		switch rng.IntN(3) {
		case 0:
			strategy.MaxUpdate = maxUpdate(fmt.Sprint(1 + rng.IntN(20)))
		case 1:
			strategy.MaxUpdate = maxUpdate(fmt.Sprintf("%d%%", 1+rng.IntN(100)))
		default:
			strategy.Recreate = rng.IntN(4) == 0
		}
		budget, _ := strategy.Budget(total)
		p := rollout.Planner{Strategy: strategy, ShimUID: fmt.Sprint(trial), SpecHash: "new"}
		ns := make([]rollout.Node, total)
		for i := range ns {
			st := []rollout.State{rollout.Absent, rollout.Installed}[rng.IntN(2)]
			ns[i] = rollout.Node{Name: fmt.Sprintf("n%d", i), UID: fmt.Sprintf("u%d", i), State: st, SpecHash: "old"}
		}
		failAt := -1
		if rng.IntN(5) == 0 {
			failAt = rng.IntN(total)
		}
		for round := 0; ; round++ {
			if round > 4*total+10 {
				t.Fatalf("trial %d: no convergence after %d rounds", trial, round)
			}
			plan, err := p.Install(ns)
			if err != nil {
				t.Fatal(err)
			}
			if plan.Halted && len(plan.Start) > 0 {
				t.Fatalf("trial %d: halted plan starts %v", trial, plan.Start)
			}
			for _, name := range plan.Start {
				i := slices.IndexFunc(ns, func(n rollout.Node) bool { return n.Name == name })
				ns[i].State, ns[i].SpecHash = rollout.Installing, "new"
			}
			inFlight := 0
			for _, n := range ns {
				if n.State == rollout.Installing {
					inFlight++
				}
			}
			if inFlight > budget {
				t.Fatalf("trial %d: %d in flight, maxUpdate %d", trial, inFlight, budget)
			}
			if plan.Done {
				if failAt >= 0 {
					t.Fatalf("trial %d: done despite a failure", trial)
				}
				break
			}
			if plan.Halted {
				break
			}
			// Some in-flight nodes finish.
			for i := range ns {
				if ns[i].State == rollout.Installing && rng.IntN(2) == 0 {
					ns[i].State = rollout.Installed
					if i == failAt {
						ns[i].State = rollout.Failed
					}
				}
			}
		}
	}
}

func BenchmarkPlan10000Nodes(b *testing.B) {
	ns := nodes(10000, rollout.Absent, "")
	for i := range ns {
		if i%3 == 0 {
			ns[i].State, ns[i].SpecHash = rollout.Installed, "new"
		}
	}
	p := rollout.Planner{Strategy: rollout.Strategy{MaxUpdate: maxUpdate("10%")}, ShimUID: "shim", SpecHash: "new"}
	b.ReportAllocs()
	for b.Loop() {
		if plan, err := p.Install(ns); err != nil || len(plan.Start) != 1000 {
			b.Fatal(plan.Start, err)
		}
	}
}

// TestPriorityFirst: nodes of a higher priority start first, whatever the
// spread order; among equals the spread order stands.
func TestPriorityFirst(t *testing.T) {
	p := rollout.Planner{ShimUID: "uid", SpecHash: "h"}
	var nodes []rollout.Node
	for i := range 8 {
		nodes = append(nodes, rollout.Node{Name: fmt.Sprintf("n%d", i)})
	}
	// The node the spread order would start last of all gets the priority.
	all := rollout.Planner{ShimUID: "uid", SpecHash: "h", Strategy: rollout.Strategy{Recreate: true}}
	order, _ := all.Install(nodes)
	want := order.Start[len(order.Start)-1]
	for k := range nodes {
		if nodes[k].Name == want {
			nodes[k].Priority = 1
		}
	}
	got, err := p.Install(nodes)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Start) != 1 || got.Start[0] != want {
		t.Errorf("started %v, want the prioritised %s", got.Start, want)
	}
}
