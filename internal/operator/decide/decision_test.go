package decide_test

import (
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/golden"
	"github.com/shimkit/shimkit/internal/nodelabel/record"
	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/rollout"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const (
	target = "h2" // the rollout's target hash
	canary = "c2" // the Shim's canary now
)

// node is a view of a targeted node named name (its label and hash: at,
// "" for none).
func node(name, at string) decide.NodeView {
	v := decide.NodeView{Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}, Matching: true, Canary: canary}
	if at != "" {
		v.Label, v.SpecHash = record.Installed, at
	}
	return v
}

// installPlan is the install plan of a node towards the target, for
// Policy.PlanFor.
func installPlan(n *corev1.Node) (*plan.NodePlan, error) {
	p := plan.New(plan.ShimRef{Name: "spin"}, plan.OpInstall)
	p.Node, p.SpecHash = n.Name, target
	return p, nil
}

// oldNodes are targeted nodes at an older spec (h1).
func oldNodes(names ...string) []decide.NodeView {
	var vs []decide.NodeView
	for _, n := range names {
		vs = append(vs, node(n, "h1"))
	}
	return vs
}

func job(op, at string, cond batchv1.JobConditionType, res *plan.NodeResult) *jobview.View {
	j := &batchv1.Job{}
	if cond != "" {
		j.Status.Conditions = []batchv1.JobCondition{{Type: cond, Status: corev1.ConditionTrue}}
	}
	return &jobview.View{Object: j, Op: op, SpecHash: at, Canary: canary, Result: res, ResultRead: res != nil}
}

func rolledBack(reason plan.Reason) *plan.NodeResult {
	return &plan.NodeResult{Outcome: plan.RolledBack, Reason: reason}
}

func with(v decide.NodeView, f func(*decide.NodeView)) decide.NodeView { f(&v); return v }

// refusal is the snapshot's refusal of the spec when refused (nil: the
// spec is rolled out).
func refusal(refused bool) *shimspec.Refusal {
	if !refused {
		return nil
	}
	return &shimspec.Refusal{Reason: v1alpha1.ReasonInvalidSpec, Message: "spec.runtimeClass: refused"}
}

// summary is what a golden file records of a decision.
type summary struct {
	States    map[string]string `json:"states"`
	Rollin    planSummary       `json:"rollin"`
	Removal   planSummary       `json:"removal"`
	Unplanned []string          `json:"unplanned,omitempty"`
	Planned   []string          `json:"planned,omitempty"`
}

type planSummary struct {
	Start    []string `json:"start,omitempty"`
	InFlight int      `json:"inFlight,omitempty"`
	Budget   int      `json:"budget"`
	Halted   bool     `json:"halted,omitempty"`
	Failed   []string `json:"failed,omitempty"`
	Done     bool     `json:"done,omitempty"`
}

func summarize(d decide.Decision, nodes []decide.NodeView) summary {
	s := summary{States: map[string]string{}, Rollin: planOf(d.Rollin), Removal: planOf(d.Removal)}
	for _, v := range nodes {
		s.States[v.Node.Name] = v.State(target, !v.Targeted()).String()
		if v.Plan != nil {
			s.Planned = append(s.Planned, v.Node.Name)
		}
	}
	for _, v := range d.Unplanned {
		s.Unplanned = append(s.Unplanned, v.Node.Name)
	}
	return s
}

func planOf(p rollout.Plan) planSummary {
	return planSummary{Start: p.Start, InFlight: p.InFlight, Budget: p.Budget, Halted: p.Halted, Failed: p.Failed, Done: p.Done}
}

// TestDecideGolden: the decision of one reconcile from a snapshot alone,
// case by case, against testdata/decisions.
func TestDecideGolden(t *testing.T) {
	two := intstr.FromInt32(2)
	planner := rollout.Planner{Strategy: rollout.Strategy{MaxUpdate: &two}, ShimUID: "uid-spin", SpecHash: target}
	planFor := func(n *corev1.Node) (*plan.NodePlan, error) {
		if n.Name == "arm-0" {
			return nil, errors.New("no artifact for the node's platform linux/arm64")
		}
		p := plan.New(plan.ShimRef{Name: "spin"}, plan.OpInstall)
		p.Node = n.Name
		return p, nil
	}
	for _, tc := range []struct {
		name    string
		nodes   []decide.NodeView
		refused bool
		shared  []string
	}{
		{name: "fresh", nodes: []decide.NodeView{node("n0", ""), node("n1", ""), node("n2", ""), node("n3", ""), node("n4", "")}},
		{name: "upgrade-in-flight", nodes: []decide.NodeView{
			with(node("n0", "h1"), func(v *decide.NodeView) { v.Job = job(jobview.OpInstall, target, "", nil) }),
			node("n1", "h1"), node("n2", "h1"), node("n3", target)}},
		{name: "failed-at-target-halts", nodes: []decide.NodeView{
			with(node("n0", "h1"), func(v *decide.NodeView) {
				v.Job = job(jobview.OpInstall, target, batchv1.JobFailed, rolledBack(plan.ReasonConfigInvalid))
			}),
			node("n1", "h1"), node("n2", "h1")}},
		{name: "failure-record-outlives-job", nodes: []decide.NodeView{
			with(node("n0", "h1"), func(v *decide.NodeView) {
				v.Failure = &record.Failure{Op: jobview.OpInstall, SpecHash: target, Reason: string(plan.ReasonConflict), Time: time.Now()}
			}),
			node("n1", "h1")}},
		{name: "failed-at-old-spec-retried", nodes: []decide.NodeView{
			with(node("n0", "h1"), func(v *decide.NodeView) {
				v.Failure = &record.Failure{Op: jobview.OpInstall, SpecHash: "h1", Reason: string(plan.ReasonConfigInvalid)}
			}),
			node("n1", "h1")}},
		{name: "canary-changed-retries-canary-failure", nodes: []decide.NodeView{
			with(node("n0", ""), func(v *decide.NodeView) {
				v.Failure = &record.Failure{Op: jobview.OpInstall, SpecHash: target, Reason: string(plan.ReasonCanaryFailed), Canary: "c1"}
			}),
			with(node("n1", ""), func(v *decide.NodeView) {
				v.Failure = &record.Failure{Op: jobview.OpInstall, SpecHash: target, Reason: string(plan.ReasonCanaryFailed), Canary: canary}
			})}},
		{name: "refused-spec-removes-only", refused: true, nodes: []decide.NodeView{
			node("n0", ""), node("n1", "h1"),
			with(node("gone-0", "h1"), func(v *decide.NodeView) { v.Matching = false })}},
		{name: "skipped-and-unplanned", nodes: []decide.NodeView{
			node("n0", ""),
			with(node("win-0", ""), func(v *decide.NodeView) { v.Skip = &nodeview.Skip{Reason: v1alpha1.SkipNotLinux, Detail: "windows"} }),
			node("arm-0", "")}},
		{name: "drifted-reinstalled", nodes: []decide.NodeView{
			with(node("n0", target), func(v *decide.NodeView) { v.Drifted = "handler spin is not served" }),
			node("n1", target)}},
		{name: "shared-first", shared: []string{"n3"}, nodes: []decide.NodeView{node("n0", ""), node("n1", ""), node("n2", ""), node("n3", "")}},
		{name: "held-node-counts-as-changing", nodes: []decide.NodeView{
			with(node("n0", ""), func(v *decide.NodeView) { v.Held = true }), node("n1", ""), node("n2", "")}},
		{name: "done", nodes: []decide.NodeView{node("n0", target), node("n1", target)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shared := map[string]bool{}
			for _, n := range tc.shared {
				shared[n] = true
			}
			snap := &decide.Snapshot{Hash: target, Refusal: refusal(tc.refused), Views: tc.nodes}
			d, err := decide.Decide(snap, decide.Policy{Planner: planner, Shared: shared, PlanFor: planFor})
			if err != nil {
				t.Fatal(err)
			}
			got, err := yaml.Marshal(summarize(d, snap.Views))
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata/decisions", tc.name+".yaml"), got, *update)
		})
	}
}

// TestDecideRemovalTouchesOnlyWhatTheShimHas: a deleted Shim uninstalls
// the nodes with its label or a Job of its own changing them, and no
// other.
func TestDecideRemovalTouchesOnlyWhatTheShimHas(t *testing.T) {
	ten := intstr.FromInt32(10)
	planner := rollout.Planner{Strategy: rollout.Strategy{MaxUpdate: &ten}, ShimUID: "uid-spin", SpecHash: target}
	nodes := []decide.NodeView{
		node("bare", ""),
		node("labelled", "h1"),
		with(node("installing", ""), func(v *decide.NodeView) { v.Job = job(jobview.OpInstall, target, "", nil) }),
		with(node("failed-install", ""), func(v *decide.NodeView) {
			v.Job = job(jobview.OpInstall, target, batchv1.JobFailed, rolledBack(plan.ReasonConfigInvalid))
		}),
	}
	d, err := decide.DecideRemoval(&decide.Snapshot{Hash: target, Views: nodes}, planner, decide.DeliveryRules{})
	if err != nil {
		t.Fatal(err)
	}
	// The running install finishes first (in flight); it is not
	// uninstalled under it. The failed install left nothing.
	if want := []string{"labelled"}; !slices.Equal(d.Removal.Start, want) || d.Removal.InFlight != 1 {
		t.Errorf("removal starts %v (in flight %d), want %v", d.Removal.Start, d.Removal.InFlight, want)
	}
	if fmt.Sprint(d.Rollin.Start) != "[]" {
		t.Errorf("a removal installs %v", d.Rollin.Start)
	}
}
