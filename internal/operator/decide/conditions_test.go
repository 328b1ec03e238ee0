package decide_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/nodejob"
	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/rollout"
)

// TestConditions: the status conditions of a rollup, without an API
// server: each one's status and reason, kstatus's Reconciling and Stalled
// consistent with them.
func TestConditions(t *testing.T) {
	shim := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "spin", Generation: 4}, Spec: v1alpha1.ShimSpec{RuntimeClass: v1alpha1.RuntimeClassSpec{Name: "spin"}}}
	deleting := shim.DeepCopy()
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	rolling := rollout.Plan{Budget: 2, InFlight: 2, Remaining: 3}
	done := rollout.Plan{Budget: 2, Done: true}
	halted := rollout.Plan{Budget: 2, Halted: true, Failed: []string{"n1"}}
	nodes := []decide.NodeView{node("n0", target), node("n1", "")}
	trip := &decide.Trip{Reason: v1alpha1.ReasonWorkloadFailures, Message: "2 workload pods failing on 1 updated node"}
	all := v1alpha1.ShimStatus{Nodes: 2, UpdatedNodes: 2}
	for _, tc := range []struct {
		name  string
		u     decide.Rollup
		want  string // Ready Progressing Degraded Reconciling Stalled, as status/reason
		ready bool
	}{
		{"rolling out", decide.Rollup{Shim: shim, Nodes: nodes, Install: rolling, Removal: done},
			"False/RollingOut True/NodesChanging False/NoFailures True/NodesChanging False/Reconciling", false},
		{"rolled out", decide.Rollup{Shim: shim, Nodes: nodes, Install: done, Removal: done, Counts: all, Classes: decide.ClassStatus{Published: true}},
			"True/RolledOut False/Idle False/NoFailures False/RolledOut False/RolledOut", true},
		// RuntimeClasses are published once the first node has the shim.
		{"a RuntimeClass to publish", decide.Rollup{Shim: shim, Nodes: nodes, Install: done, Removal: done, Counts: all},
			"False/RuntimeClassPending False/Idle False/NoFailures True/RuntimeClassPending False/Reconciling", false},
		{"halted", decide.Rollup{Shim: shim, Nodes: nodes, Install: halted, Removal: done},
			"False/RollingOut False/Halted True/NodeFailed False/Stalled True/NodeFailed", false},
		{"refused", decide.Rollup{Shim: shim, Nodes: nodes, Install: done, Removal: done, Refusal: &decide.Refusal{Reason: v1alpha1.ReasonSignatureMissing, Message: "no signature"}},
			"False/SignatureMissing False/Halted True/SignatureMissing False/Stalled True/SignatureMissing", false},
		{"resolution failed: retried, not stalled", decide.Rollup{Shim: shim, Nodes: nodes, Install: done, Removal: done, Refusal: &decide.Refusal{Reason: v1alpha1.ReasonResolveFailed, Message: "timeout"}},
			"False/ResolveFailed False/Halted True/ResolveFailed True/ResolveFailed False/Reconciling", false},
		{"conflict", decide.Rollup{Shim: shim, Nodes: nodes, Install: done, Removal: done, Counts: v1alpha1.ShimStatus{Nodes: 2}, Classes: decide.ClassStatus{Conflicts: []string{"RuntimeClass spin is someone else's"}}},
			"False/RuntimeClassConflict False/Idle True/RuntimeClassConflict False/Stalled True/RuntimeClassConflict", false},
		{"no nodes", decide.Rollup{Shim: shim, Install: done, Removal: done},
			"False/NoNodes False/Idle False/NoFailures False/Stalled True/NoNodes", false},
		{"deleting", decide.Rollup{Shim: deleting, Nodes: nodes, Install: done, Removal: rolling},
			"False/Deleting True/NodesChanging False/NoFailures True/Deleting False/Reconciling", false},
		// Progressive delivery: a paused rollout is not stalled, nor is one
		// waiting for a window or baking; a tripped gate stalls it; a
		// revert is reconciling until its nodes are back, then stalled.
		{"paused", decide.Rollup{Shim: shim, Nodes: nodes, Install: rolling, Removal: done, Delivered: decide.Delivered{Hold: decide.HoldPaused}},
			"False/Paused False/Paused False/NoFailures True/Paused False/Reconciling", false},
		{"waiting for a window", decide.Rollup{Shim: shim, Nodes: nodes, Install: rolling, Removal: done, Delivered: decide.Delivered{Hold: decide.HoldWindow, NextWindow: time.Date(2026, 11, 26, 2, 0, 0, 0, time.UTC)}},
			"False/WaitingForWindow False/WaitingForWindow False/NoFailures True/WaitingForWindow False/Reconciling", false},
		{"baking", decide.Rollup{Shim: shim, Nodes: nodes, Install: rolling, Removal: done, Delivered: decide.Delivered{Hold: decide.HoldBaking, Stage: rollout.Stage{BakeUntil: time.Date(2026, 11, 26, 2, 0, 0, 0, time.UTC)}}},
			"False/Baking True/Baking False/NoFailures True/Baking False/Reconciling", false},
		{"gate tripped", decide.Rollup{Shim: shim, Nodes: nodes, Install: rolling, Removal: done, Delivered: decide.Delivered{Hold: decide.HoldHalted, Halt: trip}},
			"False/WorkloadFailures False/Halted True/WorkloadFailures False/Stalled True/WorkloadFailures", false},
		{"reverting", decide.Rollup{Shim: shim, Nodes: nodes, Install: rolling, Removal: done, Reverted: "h3", Delivered: decide.Delivered{Halt: trip}},
			"False/Reverting True/Reverting True/Reverted True/Reverting False/Reconciling", false},
		{"reverted", decide.Rollup{Shim: shim, Nodes: nodes, Install: done, Removal: done, Reverted: "h3", Classes: decide.ClassStatus{Published: true}},
			"False/Reverted False/Idle True/Reverted False/Stalled True/Reverted", false},
		{"paused once rolled out: ready", decide.Rollup{Shim: shim, Nodes: nodes, Install: done, Removal: done, Counts: all, Classes: decide.ClassStatus{Published: true}},
			"True/RolledOut False/Idle False/NoFailures False/RolledOut False/RolledOut", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := decide.Conditions(tc.u, nil)
			got := make([]string, len(cs))
			for i, c := range cs {
				got[i] = fmt.Sprintf("%s/%s", c.Status, c.Reason)
				if c.ObservedGeneration != 4 || c.Message == "" {
					t.Errorf("%s: observedGeneration %d, message %q", c.Type, c.ObservedGeneration, c.Message)
				}
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("conditions\n got  %s\n want %s", strings.Join(got, " "), tc.want)
			}
			if tc.u.Ready() != tc.ready {
				t.Errorf("Ready() = %v", tc.u.Ready())
			}
		})
	}
}

// TestImageSources: the targeted nodes grouped by how they get the Shim's
// image; skipped, preinstalled and non-image nodes are not counted.
func TestImageSources(t *testing.T) {
	with := func(v decide.NodeView, way string) decide.NodeView { v.ImageWay = way; return v }
	skipped := with(node("n9", ""), nodejob.ImageCopy)
	skipped.Skip = &nodeview.Skip{Reason: v1alpha1.SkipReadOnlyHost}
	baked := with(node("n8", ""), nodejob.ImageVolume)
	baked.Preinstalled = true
	views := []decide.NodeView{
		with(node("n3", ""), nodejob.ImageVolume), with(node("n1", "h"), nodejob.ImageVolume),
		with(node("n2", ""), nodejob.ImageCopy), skipped, baked, node("n7", ""),
	}
	got := decide.ImageSources(views)
	want := []v1alpha1.ImageSourceNodes{
		{Way: nodejob.ImageCopy, Count: 1, Nodes: []string{"n2"}},
		{Way: nodejob.ImageVolume, Count: 2, Nodes: []string{"n1", "n3"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ImageSources (-want +got):\n%s", diff)
	}
}

// TestConditionsOfStateNotHistory: a Shim's conditions are a function of
// the fleet's state, not of how it got there. A preinstalled Shim whose
// every node stopped reporting its handler keeps its RuntimeClass (the
// pods asking for it pend rather than being refused), while a new Shim in
// that state never published one: both are NoNodes, Stalled, not Ready
// (the first said Ready "0 of 0 nodes", and kubectl wait passed).
func TestConditionsOfStateNotHistory(t *testing.T) {
	shim := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "spin", Generation: 2}, Spec: v1alpha1.ShimSpec{RuntimeClass: v1alpha1.RuntimeClassSpec{Name: "spin"}}}
	old := shim.DeepCopy()
	old.Status.Revisions = []v1alpha1.Revision{{SpecHash: "h1"}}
	old.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonRolledOut}}
	done := rollout.Plan{Budget: 1, Done: true}
	skipped := node("n1", "")
	skipped.Skip = &nodeview.Skip{Reason: v1alpha1.SkipHandlerNotReported, Detail: "handler spin not reported"}
	gone := node("n2", "")
	gone.Matching = false
	for _, state := range []struct {
		name  string
		nodes []decide.NodeView
		want  string
	}{
		{"no node", nil, "False/NoNodes False/Idle False/NoFailures False/Stalled True/NoNodes"},
		{"every node skipped", []decide.NodeView{skipped}, "False/NoNodes False/Idle False/NoFailures False/Stalled True/NoNodes"},
		{"no node selected", []decide.NodeView{gone}, "False/NoNodes False/Idle False/NoFailures False/Stalled True/NoNodes"},
	} {
		var first []metav1.Condition
		for _, history := range []struct {
			name string
			u    decide.Rollup
		}{
			{"new", decide.Rollup{Shim: shim, Install: done, Removal: done}},
			{"rolled out before, RuntimeClass kept", decide.Rollup{Shim: old, Install: done, Removal: done, Classes: decide.ClassStatus{Published: true}}},
		} {
			u := history.u
			u.Nodes = state.nodes
			u.Counts = decide.Counts(&decide.Snapshot{Shim: u.Shim, Hash: target, Views: state.nodes})
			cs := decide.Conditions(u, nil)
			got := make([]string, len(cs))
			for i, c := range cs {
				got[i] = fmt.Sprintf("%s/%s", c.Status, c.Reason)
			}
			if strings.Join(got, " ") != state.want || u.Ready() {
				t.Errorf("%s, %s: conditions %s (Ready() %v), want %s", state.name, history.name, strings.Join(got, " "), u.Ready(), state.want)
			}
			if first == nil {
				first = cs
			} else if diff := cmp.Diff(first, cs); diff != "" {
				t.Errorf("%s: the conditions depend on the history (-new +%s):\n%s", state.name, history.name, diff)
			}
		}
	}
}

// TestRevertNote: a revert says why the rollout failed, the health gate's
// trip naming the pod and node, as the status recorded it, in every
// reconcile of the revert (not "a node failed"); and it counts the nodes
// that have the previous revision installed.
func TestRevertNote(t *testing.T) {
	shim := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "spin", Generation: 3}, Spec: v1alpha1.ShimSpec{RuntimeClass: v1alpha1.RuntimeClassSpec{Name: "spin"}}}
	trip := &decide.Trip{Reason: v1alpha1.ReasonWorkloadFailures, Message: "1 workload pod failing on 1 updated node (limit 1 per node): n1: default/web-0 (SandboxFailed: failed to create shim task)"}
	nodeFail := &decide.Trip{Reason: v1alpha1.ReasonNodeFailed, Message: "node n3 failed (Conflict: handler spin is someone else's)"}
	reverting := rollout.Plan{Budget: 1, InFlight: 1, Remaining: 1}
	counts := v1alpha1.ShimStatus{Nodes: 3, UpdatedNodes: 2, SpecHash: "h1"}
	for _, c := range []struct {
		name string
		u    decide.Rollup
		want string
	}{
		{"gate, recorded", decide.Rollup{Shim: shim, Install: reverting, Removal: reverting, Counts: counts, Reverted: "h2", Cause: trip},
			"the rollout of h2 failed (the health gate tripped: " + trip.Message + "); 2 of 3 nodes have the previous revision h1"},
		{"node failure, recorded", decide.Rollup{Shim: shim, Install: reverting, Removal: reverting, Counts: counts, Reverted: "h2", Cause: nodeFail},
			"the rollout of h2 failed (" + nodeFail.Message + "); 2 of 3 nodes have the previous revision h1"},
		{"nothing recorded", decide.Rollup{Shim: shim, Install: reverting, Removal: reverting, Counts: counts, Reverted: "h2"},
			"the rollout of h2 failed (a node failed); 2 of 3 nodes have the previous revision h1"},
	} {
		for _, cond := range decide.Conditions(c.u, nil) {
			if cond.Type == v1alpha1.ConditionReady || cond.Type == v1alpha1.ConditionDegraded || cond.Type == v1alpha1.ConditionProgressing {
				if !strings.HasPrefix(cond.Message, c.want) {
					t.Errorf("%s: %s says %q, want it to start %q", c.name, cond.Type, cond.Message, c.want)
				}
			}
		}
	}
}
