package decide

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/shimkit/shimkit/internal/nodelabel/record"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/nodegate"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

func pod(ns, name string, f func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if f != nil {
		f(p)
	}
	return p
}

// TestDrainPods: what a drain evicts, waits for, and is blocked by, as
// kubectl drain judges it.
func TestDrainPods(t *testing.T) {
	budget := func(name string, allowed int32) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec:   policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}},
			Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed, CurrentHealthy: 1, DesiredHealthy: 1}}
	}
	pods := []*corev1.Pod{
		pod("default", "web", nil),
		pod("default", "db", nil),
		pod("default", "done", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
		pod("kube-system", "static", func(p *corev1.Pod) { p.Annotations = map[string]string{mirrorAnnotation: "x"} }),
		pod("shimkit-system", "installer", nil),
		pod("default", "agent", func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "agent", Controller: ptr.To(true)}}
		}),
		pod("default", "cache", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}),
		pod("default", "leaving", func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: time.Now()} }),
	}
	budgets := []*policyv1.PodDisruptionBudget{budget("db", 0), budget("web", 1)}
	names := func(ps []*corev1.Pod) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	for _, tc := range []struct {
		name                   string
		d                      v1alpha1.Disruption
		evict, waiting, blocks []string
	}{
		{name: "defaults", d: v1alpha1.Disruption{Policy: v1alpha1.DisruptDrain},
			evict: []string{"web", "db"}, waiting: []string{"default/leaving"}, blocks: []string{"default/db: PodDisruptionBudget default/db allows no disruption now (1 healthy, 1 desired)", "default/cache: emptyDir data (set deleteEmptyDirData)"}},
		{name: "emptyDir data and DaemonSets", d: v1alpha1.Disruption{Policy: v1alpha1.DisruptDrain, DeleteEmptyDirData: true, IgnoreDaemonSets: ptr.To(false)},
			evict: []string{"web", "db", "cache"}, waiting: []string{"default/leaving"}, blocks: []string{"default/db: PodDisruptionBudget default/db allows no disruption now (1 healthy, 1 desired)", "default/agent: a DaemonSet's pod (set ignoreDaemonSets)"}},
		{name: "a selector", d: v1alpha1.Disruption{Policy: v1alpha1.DisruptDrain, PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
			evict: []string{"web"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evict, waiting, blocked := DrainPods(pods, &tc.d, budgets, "shimkit-system")
			var blocks []string
			for _, b := range blocked {
				blocks = append(blocks, b.Pod+": "+b.Why)
			}
			if !slices.Equal(names(evict), tc.evict) || !slices.Equal(waiting, tc.waiting) || !slices.Equal(blocks, tc.blocks) {
				t.Errorf("evict %v, waiting %v, blocked %q\nwant %v, %v, %q", names(evict), waiting, blocks, tc.evict, tc.waiting, tc.blocks)
			}
		})
	}
}

// drainObs is a Shim with the disruption policy whose node n1 needs the
// install; nodeF changes the node, podsOn the pods of the node read.
func drainObs(policy v1alpha1.DisruptionPolicy, now time.Time, nodeF func(*corev1.Node), pods []*corev1.Pod) *Snapshot {
	shim := decideShim()
	shim.Spec.RolloutStrategy.Disruption = &v1alpha1.Disruption{Policy: policy, Timeout: &metav1.Duration{Duration: time.Minute}}
	opts := shimspec.Settings{InstallerImage: "i", Namespace: "shimkit-system"}
	n := nodeAt("n1", "a", "", nil)
	if nodeF != nil {
		nodeF(n)
	}
	obs := NewSnapshot(shim, opts, now, now)
	obs.Aim(nil)
	obs.Shims, obs.Classes = []v1alpha1.Shim{*shim}, &ClassSet{}
	obs.OperatorNamespace = "shimkit-system"
	BuildViews(obs, NodeReads{Nodes: []*corev1.Node{n}})
	if pods != nil {
		obs.NodePods = map[string][]*corev1.Pod{"n1": pods}
	}
	return obs
}

func planDrain(t *testing.T, obs *Snapshot) *Plan {
	t.Helper()
	obs, records, err := Records(obs)
	if err != nil {
		t.Fatal(err)
	}
	p, err := PlanInstall(obs, records, Rules{Policy: Policy{Planner: shimspec.Planner(obs.Shim, obs.Hash), PlanFor: obs.PlanFor(shimspec.Settings{InstallerImage: "i", Namespace: "shimkit-system"}), Delivery: Delivery(obs)}, Resync: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// flatten returns the actions of acts that write or emit, in order, out
// of their Together and InOrder groups.
func flatten(acts []Action) []Action {
	var out []Action
	for _, a := range acts {
		switch a := a.(type) {
		case Together:
			out = append(out, flatten(a)...)
		case InOrder:
			out = append(out, flatten(a)...)
		default:
			out = append(out, a)
		}
	}
	return out
}

// describeDisrupt names the plan's disruption actions.
func describeDisrupt(acts []Action) []string {
	var out []string
	for _, a := range flatten(acts) {
		switch a := a.(type) {
		case Cordon:
			out = append(out, fmt.Sprintf("cordon %s own=%v", a.Node.Name, a.Disrupted.Cordoned))
		case Release:
			out = append(out, fmt.Sprintf("release %s uncordon=%v", a.Node, a.Uncordon))
		case Evict:
			out = append(out, "evict "+a.Namespace+"/"+a.Name)
		case MarkFailed:
			out = append(out, "fail "+a.Node+" "+a.Failure.Reason)
		}
	}
	return out
}

// TestDisruption: a node is cordoned before its Job, drained under its
// budgets, started once empty, failed (DrainBlocked, released, never
// started) at the drain's timeout, and released once its Job ended;
// a node someone else cordoned is never uncordoned.
func TestDisruption(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	since := now.Add(-10 * time.Second)
	mine := func(cordoned bool) func(*corev1.Node) {
		return func(n *corev1.Node) {
			n.Spec.Unschedulable = true
			n.Annotations[record.DisruptionKey("spin")] = record.Disrupted{Since: since, Cordoned: cordoned}.Value()
		}
	}
	web := pod("default", "web", nil)
	for _, tc := range []struct {
		name    string
		policy  v1alpha1.DisruptionPolicy
		at      time.Time
		node    func(*corev1.Node)
		pods    []*corev1.Pod
		job     *jobview.View
		started bool
		acts    []string
	}{
		{name: "cordon first", policy: v1alpha1.DisruptDrain, at: now, acts: []string{"cordon n1 own=true"}},
		{name: "cordoned by someone else", policy: v1alpha1.DisruptCordon, at: now, node: func(n *corev1.Node) { n.Spec.Unschedulable = true }, acts: []string{"cordon n1 own=false"}},
		{name: "cordoned: the Job starts", policy: v1alpha1.DisruptCordon, at: now, node: mine(true), started: true},
		{name: "draining", policy: v1alpha1.DisruptDrain, at: now, node: mine(true), pods: []*corev1.Pod{web}, acts: []string{"evict default/web"}},
		{name: "drained: the Job starts", policy: v1alpha1.DisruptDrain, at: now, node: mine(true), pods: []*corev1.Pod{}, started: true},
		{name: "the drain times out", policy: v1alpha1.DisruptDrain, at: since.Add(time.Minute), node: mine(true), pods: []*corev1.Pod{web},
			acts: []string{"fail n1 DrainBlocked", "release n1 uncordon=true"}},
		{name: "the Job ended: released", policy: v1alpha1.DisruptDrain, at: now, node: func(n *corev1.Node) {
			mine(false)(n)
			n.Labels["shim.containerd.x-k8s.io/spin"], n.Annotations["shim.containerd.x-k8s.io/spin"] = "installed", "h"
		}, acts: []string{"release n1 uncordon=false"}},
		{name: "another Shim's installer holds it: kept", policy: v1alpha1.DisruptDrain, at: now, node: mine(true), pods: []*corev1.Pod{}},
		{name: "paused: released", policy: v1alpha1.DisruptDrain, at: now, node: mine(true), pods: []*corev1.Pod{web}, acts: []string{"release n1 uncordon=true"}},
		{name: "the Job runs: kept", policy: v1alpha1.DisruptDrain, at: now, node: mine(true),
			job: &jobview.View{Object: &batchv1.Job{}, Op: jobview.OpInstall, SpecHash: "h"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := drainObs(tc.policy, tc.at, tc.node, tc.pods)
			obs.Shim.Spec.RolloutStrategy.Paused = strings.HasPrefix(tc.name, "paused")
			if tc.name == "the Job ended: released" {
				obs.Views[0].SpecHash = obs.Hash
			}
			if strings.HasPrefix(tc.name, "another Shim's") {
				obs.Gate = nodegate.View{Shim: "spin", Held: map[string]nodegate.Holder{"n1": {Shim: "other", Job: "other-job"}}}
			}
			if tc.job != nil {
				tc.job.SpecHash = obs.Hash
				obs.Views[0].Job = tc.job
			}
			p := planDrain(t, obs)
			if got := describeDisrupt(p.Disrupt); !slices.Equal(got, tc.acts) || (len(p.Starts) > 0) != tc.started {
				t.Errorf("disrupt %v, %d starts; want %v, started %v", got, len(p.Starts), tc.acts, tc.started)
			}
			if !tc.started && len(tc.acts) > 0 && !strings.HasPrefix(tc.acts[len(tc.acts)-1], "release") && p.Requeue > 5*time.Second {
				t.Errorf("requeue %v while disrupting", p.Requeue)
			}
		})
	}
}

// TestDrainBlockedNamesTheBudget: the failure at the timeout quotes what
// keeps the pod.
func TestDrainBlockedNamesTheBudget(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	obs := drainObs(v1alpha1.DisruptDrain, now, func(n *corev1.Node) {
		n.Spec.Unschedulable = true
		n.Annotations[record.DisruptionKey("spin")] = record.Disrupted{Since: now.Add(-time.Hour), Cordoned: true}.Value()
	}, []*corev1.Pod{pod("default", "web", nil)})
	one := intstr.FromInt32(1)
	obs.Budgets = []*policyv1.PodDisruptionBudget{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}
	p := planDrain(t, obs)
	var f *MarkFailed
	for _, a := range flatten(p.Disrupt) {
		if m, ok := a.(MarkFailed); ok {
			f = &m
		}
	}
	if f == nil || f.Failure.Reason != v1alpha1.ReasonDrainBlocked || !strings.Contains(f.Failure.Message, "PodDisruptionBudget default/web allows no disruption") {
		t.Fatalf("failure %+v", f)
	}
}

// TestDrainNoteInStatus: while a node drains, Progressing names it, its
// deadline, the pods left and the budget that keeps one; once drained,
// nothing is said.
func TestDrainNoteInStatus(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	draining := func(n *corev1.Node) {
		n.Spec.Unschedulable = true
		n.Annotations[record.DisruptionKey("spin")] = record.Disrupted{Since: now.Add(-30 * time.Second), Cordoned: true}.Value()
	}
	obs := drainObs(v1alpha1.DisruptDrain, now, draining, []*corev1.Pod{pod("default", "web", nil), pod("default", "api", nil)})
	one := intstr.FromInt32(1)
	obs.Budgets = []*policyv1.PodDisruptionBudget{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}
	p := planDrain(t, obs)
	c := findCondition(p.Status.Status.Conditions, v1alpha1.ConditionProgressing)
	want := "draining n1 until 2026-11-28T12:00:30Z: 2 pods left (default/api, default/web); default/web: PodDisruptionBudget default/web allows no disruption now (0 healthy, 0 desired)"
	if c == nil || !strings.HasSuffix(c.Message, want) {
		t.Errorf("Progressing while n1 drains: %+v\nwant it to end with %q", c, want)
	}
	obs = drainObs(v1alpha1.DisruptDrain, now, draining, []*corev1.Pod{})
	if c := findCondition(planDrain(t, obs).Status.Status.Conditions, v1alpha1.ConditionProgressing); c == nil || strings.Contains(c.Message, "draining") {
		t.Errorf("Progressing once n1 is drained: %+v", c)
	}
}

func findCondition(cs []metav1.Condition, t string) *metav1.Condition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}
