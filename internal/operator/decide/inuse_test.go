package decide_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/rollout"
)

// inUseJob is a node's uninstall Job that the installer ended with
// HandlerInUse at ended, naming one sandbox.
func inUseJob(ended time.Time) *jobview.View {
	j := job(jobview.OpUninstall, "h1", batchv1.JobFailed, &plan.NodeResult{Outcome: plan.Failed, Reason: plan.ReasonHandlerInUse,
		Message: "handler spin is used by 1 pod sandboxes", InUse: []plan.Sandbox{{Namespace: "kube-system", Name: "static-web", Handler: "spin", Ready: true}}})
	j.Object.Status.Conditions[0].LastTransitionTime = metav1.NewTime(ended)
	return j
}

// TestRemovalWaitsForPods: a deleted Shim's node where pods of its
// RuntimeClasses run, or whose installer just found sandboxes using its
// handler, is held (never started, never failed, never done) while the
// other nodes go on; once the pods are gone (and InUseRetry has passed
// since the installer's refusal) it is started.
func TestRemovalWaitsForPods(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	three := intstr.FromInt32(3)
	planner := rollout.Planner{Strategy: rollout.Strategy{MaxUpdate: &three}, ShimUID: "uid-spin", SpecHash: target}
	views := func() []decide.NodeView {
		return []decide.NodeView{
			node("busy", "h1"),
			node("free", "h1"),
			with(node("static", "h1"), func(v *decide.NodeView) { v.Job = inUseJob(now.Add(-10 * time.Second)) }),
		}
	}
	cases := []struct {
		name          string
		pods          map[string][]string
		at            time.Time
		start, held   []string
		failed        []string
		done, deleted bool
	}{
		{name: "pods on busy, a refusal on static", pods: map[string][]string{"busy": {"default/web-1", "default/web-2"}}, at: now,
			start: []string{"free"}, held: []string{"busy", "static"}},
		{name: "the pods gone, the refusal recent", at: now, start: []string{"busy", "free"}, held: []string{"static"}},
		{name: "the refusal past InUseRetry", at: now.Add(decide.InUseRetry), start: []string{"busy", "free", "static"}},
		{name: "pods on static again", pods: map[string][]string{"static": {"kube-system/static-web"}}, at: now.Add(time.Hour),
			start: []string{"busy", "free"}, held: []string{"static"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obs := &decide.Snapshot{Hash: target, Views: views(), Pods: c.pods, Now: c.at}
			d, err := decide.DecideRemoval(obs, planner, decide.DeliveryRules{Now: c.at})
			if err != nil {
				t.Fatal(err)
			}
			r := d.Removal
			if !slices.Equal(slices.Sorted(slices.Values(r.Start)), c.start) || !slices.Equal(r.Held, c.held) || r.Halted || r.Done || len(r.Failed) > 0 {
				t.Errorf("removal %+v; want start %v, held %v, not halted, not done", r, c.start, c.held)
			}
			for _, name := range c.held {
				if v := d.ByName[name]; len(v.InUse) == 0 {
					t.Errorf("held node %s names no pod", name)
				}
			}
		})
	}
}

// TestInUseNote: the status names the nodes that wait and their first
// pods.
func TestInUseNote(t *testing.T) {
	vs := []decide.NodeView{
		with(node("n1", "h1"), func(v *decide.NodeView) { v.InUse = []string{"a/1", "a/2", "a/3", "a/4"} }),
		with(node("n2", "h1"), func(v *decide.NodeView) { v.InUse = []string{"kube-system/static-web"} }),
	}
	got := decide.InUseNote(vs, []string{"n1", "n2"})
	if want := "node n1: 4 pods (a/1, a/2, a/3, …); node n2: kube-system/static-web"; got != want {
		t.Errorf("InUseNote = %q, want %q", got, want)
	}
	var many []string
	for _, n := range "abcdefg" {
		vs = append(vs, with(node(string(n), "h1"), func(v *decide.NodeView) { v.InUse = []string{"x/y"} }))
		many = append(many, string(n))
	}
	if got := decide.InUseNote(vs, many); !strings.HasSuffix(got, "; 2 more nodes") {
		t.Errorf("InUseNote of 7 nodes = %q", got)
	}
}

// TestDeletingStatusNamesPods: a deleted Shim whose removal waits for
// pods says so in Ready and Reconciling, with reason HandlerInUse.
func TestDeletingStatusNamesPods(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	shim := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "spin", UID: "uid-spin", DeletionTimestamp: &metav1.Time{Time: now}}}
	obs := &decide.Snapshot{Shim: shim, Hash: target, Views: []decide.NodeView{node("busy", "h1")},
		Pods: map[string][]string{"busy": {"default/web-1"}}, Now: now, RolloutNow: now}
	p, err := decide.PlanRemoval(obs, nil, rollout.Planner{ShimUID: "uid-spin", SpecHash: target}, decide.Rules{Resync: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Starts) != 0 || p.Decision.Removal.Done || p.Requeue != decide.InUseRecheck || len(p.Delete) != 0 {
		t.Errorf("plan: %d starts, done %v, requeue %v, %d RuntimeClasses deleted; want none, false, %v, 0", len(p.Starts), p.Decision.Removal.Done, p.Requeue, len(p.Delete), decide.InUseRecheck)
	}
	for _, c := range p.Status.Status.Conditions {
		if c.Type != "Ready" && c.Type != "Reconciling" {
			continue
		}
		if c.Reason != "HandlerInUse" || !strings.Contains(c.Message, "node busy: default/web-1") {
			t.Errorf("%s: %s %q", c.Type, c.Reason, c.Message)
		}
	}
}

// TestEvictions: with deletePolicy Evict, a deleted Shim evicts the pods
// the API server shows on the nodes its removal holds, on as many nodes
// as maxUpdate leaves free; with Wait, or not deleted, none.
func TestEvictions(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	two := intstr.FromInt32(2)
	planner := rollout.Planner{Strategy: rollout.Strategy{MaxUpdate: &two}, ShimUID: "uid-spin", SpecHash: target}
	pods := map[string][]string{"a": {"default/web-1", "default/web-2"}, "b": {"apps/db-0"}, "c": {"x/y"}}
	cases := []struct {
		name    string
		policy  v1alpha1.DeletePolicy
		deleted bool
		views   []decide.NodeView
		want    []decide.Eviction
	}{
		{name: "wait", policy: v1alpha1.DeleteWait, deleted: true, views: []decide.NodeView{node("a", "h1"), node("b", "h1")}},
		{name: "evict, not deleted", policy: v1alpha1.DeleteEvict, views: []decide.NodeView{node("a", "h1")}},
		{name: "evict, two free slots", policy: v1alpha1.DeleteEvict, deleted: true, views: []decide.NodeView{node("a", "h1"), node("b", "h1"), node("c", "h1")},
			want: []decide.Eviction{{Node: "a", Namespace: "default", Name: "web-1"}, {Node: "a", Namespace: "default", Name: "web-2"}, {Node: "b", Namespace: "apps", Name: "db-0"}}},
		{name: "evict, one slot left beside a free node", policy: v1alpha1.DeleteEvict, deleted: true, views: []decide.NodeView{node("a", "h1"), node("free", "h1")},
			want: []decide.Eviction{{Node: "a", Namespace: "default", Name: "web-1"}, {Node: "a", Namespace: "default", Name: "web-2"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			shim := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "spin", UID: "uid-spin"}, Spec: v1alpha1.ShimSpec{DeletePolicy: c.policy}}
			if c.deleted {
				shim.DeletionTimestamp = &metav1.Time{Time: now}
			}
			obs := &decide.Snapshot{Shim: shim, Hash: target, Views: c.views, Pods: pods, Now: now, RolloutNow: now}
			d, err := decide.DecideRemoval(obs, planner, decide.DeliveryRules{Now: now})
			if err != nil {
				t.Fatal(err)
			}
			if got := decide.Evictions(obs, &d, len(d.Removal.Start)); !slices.Equal(got, c.want) {
				t.Errorf("Evictions = %v, want %v", got, c.want)
			}
		})
	}
}

// TestFences: a node held for its pods keeps its label and is tainted
// (once, with a Warning naming the pods); a fenced node no longer held
// loses the taint; a deleted Shim's nodes (fencing off: its RuntimeClasses
// are fenced) lose theirs; a taint of the key someone else wrote with
// another value is not the Shim's.
func TestFences(t *testing.T) {
	three := intstr.FromInt32(3)
	planner := rollout.Planner{Strategy: rollout.Strategy{MaxUpdate: &three}, ShimUID: "uid-spin", SpecHash: target}
	shim := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "spin", UID: "uid-spin"}}
	fence := decide.FenceTaint("spin")
	fenced := func(v *decide.NodeView) { v.Node.Spec.Taints = []corev1.Taint{fence} }
	foreign := func(v *decide.NodeView) {
		v.Node.Spec.Taints = []corev1.Taint{{Key: fence.Key, Value: "theirs", Effect: corev1.TaintEffectNoSchedule}}
	}
	cases := []struct {
		name           string
		views          []decide.NodeView
		pods           map[string][]string
		fencing        bool
		fence, unfence []string
	}{
		{name: "held, not fenced yet", views: []decide.NodeView{node("busy", "h1"), node("free", "h1")}, pods: map[string][]string{"busy": {"default/web"}}, fencing: true, fence: []string{"busy"}},
		{name: "held, fenced already", views: []decide.NodeView{with(node("busy", "h1"), fenced)}, pods: map[string][]string{"busy": {"default/web"}}, fencing: true},
		{name: "the pods gone", views: []decide.NodeView{with(node("busy", "h1"), fenced)}, fencing: true, unfence: []string{"busy"}},
		{name: "a deleted Shim's", views: []decide.NodeView{with(node("busy", "h1"), fenced)}, pods: map[string][]string{"busy": {"default/web"}}, unfence: []string{"busy"}},
		{name: "someone else's taint of the key", views: []decide.NodeView{with(node("busy", "h1"), foreign)}, pods: map[string][]string{"busy": {"default/web"}}, fencing: true, fence: []string{"busy"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obs := &decide.Snapshot{Shim: shim, Hash: target, Views: c.views, Pods: c.pods}
			d, err := decide.DecideRemoval(obs, planner, decide.DeliveryRules{})
			if err != nil {
				t.Fatal(err)
			}
			var fences, unfences, warnings []string
			for _, a := range flattenActions(decide.Fences(obs, &d, c.fencing)) {
				switch a := a.(type) {
				case decide.Fence:
					fences = append(fences, a.Node.Name)
				case decide.Unfence:
					unfences = append(unfences, a.Node.Name)
				case decide.Notice:
					warnings = append(warnings, a.Note)
				}
			}
			if !slices.Equal(fences, c.fence) || !slices.Equal(unfences, c.unfence) || len(warnings) != len(c.fence) {
				t.Errorf("fence %v, unfence %v, warnings %q; want fence %v, unfence %v, a warning per fence", fences, unfences, warnings, c.fence, c.unfence)
			}
			for _, w := range warnings {
				if !strings.Contains(w, "default/web") {
					t.Errorf("warning %q names no pod", w)
				}
			}
			if c.name == "someone else's taint of the key" && c.views[0].Node.Spec.Taints[0].Value != "theirs" {
				t.Error("the node read was changed")
			}
		})
	}
}

// flattenActions returns the actions of acts out of their Together and
// InOrder groups, in order.
func flattenActions(acts []decide.Action) []decide.Action {
	var out []decide.Action
	for _, a := range acts {
		switch a := a.(type) {
		case decide.Together:
			out = append(out, flattenActions(a)...)
		case decide.InOrder:
			out = append(out, flattenActions(a)...)
		default:
			out = append(out, a)
		}
	}
	return out
}
