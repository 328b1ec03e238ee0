package decide

import (
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/nodelabel/record"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// workloadView is a node in the state b picks for the workload decisions:
// the Shim installed at the target or an older spec, or not; pods of the
// Shim's RuntimeClasses on it, other pods; its installer's last
// uninstall refused for sandboxes in use, recently or long ago; cordoned
// by someone, by the Shim (its record, the cordon its own or not).
func workloadView(shim *v1alpha1.Shim, name string, b uint16, now time.Time) (NodeView, []string, []*corev1.Pod) {
	n := nodeAt(name, "a", []string{"h1", "h0", "", "h1"}[b&3], nil)
	if b&4 != 0 {
		n.Spec.Unschedulable = true
	}
	switch (b >> 3) & 3 {
	case 1:
		n.Annotations[record.DisruptionKey(shim.Name)] = record.Disrupted{Since: now.Add(-time.Minute), Cordoned: true}.Value()
	case 2:
		n.Annotations[record.DisruptionKey(shim.Name)] = record.Disrupted{Since: now.Add(-time.Hour), Cordoned: false}.Value()
	}
	v := NodeViewOf(shim, n, "")
	var classPods []string
	if b&0x20 != 0 {
		classPods = []string{"default/web-" + name}
	}
	var pods []*corev1.Pod
	if b&0x40 != 0 {
		pods = append(pods, pod("default", "app-"+name, nil))
	}
	if b&0x80 != 0 && v.Label != "" {
		ended := now.Add(-time.Duration(b>>8&0xf) * 5 * time.Second)
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "job-" + name}, Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(ended)}}}}
		v.Job = &jobview.View{Object: j, Op: jobview.OpUninstall, SpecHash: v.SpecHash, ResultRead: true,
			Result: &plan.NodeResult{Outcome: plan.Failed, Reason: plan.ReasonHandlerInUse, InUse: []plan.Sandbox{{Namespace: "kube-system", Name: "static", Ready: true}}}}
	}
	return v, classPods, pods
}

// FuzzWorkloads checks, on random fleets, the decisions that keep running
// pods first: a node whose pods of the Shim's RuntimeClasses run (or
// whose installer just found sandboxes using its handler) is never
// uninstalled; no node is changed under a disruption policy before it is
// cordoned (and, with Drain, emptied); only a schedulable node gets a
// cordon of the Shim's own, and only a cordon of the Shim's own is ever
// lifted; pods are evicted only from nodes the Shim drains or waits on.
func FuzzWorkloads(f *testing.F) {
	f.Add([]byte{0x21, 0x00, 0xe1, 0x29, 0x40, 0x52, 0x88, 0x0c, 0x13}, uint8(0), uint8(1))
	f.Add([]byte{0x08, 0x48, 0x4c, 0x10, 0x50, 0x03, 0x21, 0xa0, 0x81}, uint8(0x0b), uint8(2))
	f.Add([]byte{0x61, 0x69, 0x71, 0x41, 0x01, 0x09, 0x11, 0xe1, 0xe9}, uint8(0x16), uint8(3))
	f.Add([]byte{0x2c, 0x0c, 0x14, 0x54, 0x80, 0x81, 0x82}, uint8(0x1d), uint8(0))
	f.Fuzz(func(t *testing.T, states []byte, flags uint8, maxUpdate uint8) {
		if len(states) > 40 {
			states = states[:40]
		}
		now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
		shim := decideShim()
		mu := intstr.FromInt32(int32(maxUpdate%4) + 1)
		shim.Spec.RolloutStrategy.Rolling.MaxUpdate = &mu
		policy := []v1alpha1.DisruptionPolicy{"", v1alpha1.DisruptNone, v1alpha1.DisruptCordon, v1alpha1.DisruptDrain}[flags&3]
		shim.Spec.RolloutStrategy.Disruption = &v1alpha1.Disruption{Policy: policy, Timeout: &metav1.Duration{Duration: 10 * time.Minute}}
		deleting := flags&4 != 0
		if deleting {
			shim.DeletionTimestamp = &metav1.Time{Time: now}
		}
		if flags&8 != 0 {
			shim.Spec.DeletePolicy = v1alpha1.DeleteEvict
		}
		obs := &Snapshot{Shim: shim, Hash: "h1", SpecHash: "h1", Shims: []v1alpha1.Shim{*shim}, Now: now, RolloutNow: now,
			Pods: map[string][]string{}, NodePods: map[string][]*corev1.Pod{}, OperatorNamespace: "shimkit-system", Classes: &ClassSet{}}
		for i := 0; i+1 < len(states); i += 2 {
			name := fmt.Sprintf("n%02d", i/2)
			v, classPods, pods := workloadView(shim, name, uint16(states[i])|uint16(states[i+1])<<8, now)
			if flags&0x10 != 0 && i%4 == 0 {
				v.Node.Labels["pool"] = "b" // no longer targeted: removed
				v.Matching = false
			}
			obs.Views = append(obs.Views, v)
			obs.Pods[name], obs.NodePods[name] = classPods, pods
		}
		obs.Fresh = make([]bool, len(obs.Views))
		obs, records, err := Records(obs)
		if err != nil {
			t.Fatal(err)
		}
		rules := Rules{Policy: Policy{Planner: shimspec.Planner(obs.Shim, obs.Hash), PlanFor: func(n *corev1.Node) (*plan.NodePlan, error) {
			return &plan.NodePlan{Node: n.Name, Operation: plan.OpInstall, SpecHash: "h1"}, nil
		}, Delivery: Delivery(obs)}, Resync: 10 * time.Minute}
		var p *Plan
		if deleting {
			p, err = PlanRemoval(obs, records, rules.Policy.Planner, rules)
		} else {
			p, err = PlanInstall(obs, records, rules)
		}
		if err != nil {
			t.Fatal(err)
		}
		checkWorkloads(t, obs, p, policy)
	})
}

func checkWorkloads(t *testing.T, obs *Snapshot, p *Plan, policy v1alpha1.DisruptionPolicy) {
	t.Helper()
	byName := map[string]*NodeView{}
	for i := range obs.Views {
		byName[obs.Views[i].Node.Name] = &obs.Views[i]
	}
	for _, st := range p.Starts {
		v, name := st.View, st.View.Node.Name
		if st.Op == jobview.OpUninstall && len(obs.Pods[name]) > 0 {
			t.Errorf("node %s uninstalled while pods of the Shim run there: %v", name, obs.Pods[name])
		}
		if j := v.Job; j != nil && j.InUse() && obs.Now.Before(j.Ended().Add(InUseRetry)) && (st.Op == jobview.OpUninstall) {
			t.Errorf("node %s uninstalled again %s after its installer found sandboxes in use", name, obs.Now.Sub(j.Ended()))
		}
		if policy == v1alpha1.DisruptCordon || policy == v1alpha1.DisruptDrain {
			if _, ok := record.DisruptedBy(v.Node, obs.Shim.Name); !ok {
				t.Errorf("node %s changed before it was cordoned (%s)", name, policy)
			}
		}
		if policy == v1alpha1.DisruptDrain {
			if evict, _, blocked := DrainPods(obs.NodePods[name], obs.Shim.Spec.RolloutStrategy.Disruption, obs.Budgets, obs.OperatorNamespace); len(evict)+len(blocked) > 0 {
				t.Errorf("node %s changed before it was drained: %d pods left", name, len(evict)+len(blocked))
			}
		}
	}
	for _, a := range flatten(p.Disrupt) {
		switch a := a.(type) {
		case Cordon:
			if _, ok := record.DisruptedBy(a.Node, obs.Shim.Name); ok {
				t.Errorf("node %s cordoned twice", a.Node.Name)
			}
			if a.Disrupted.Cordoned && a.Node.Spec.Unschedulable {
				t.Errorf("node %s: someone else's cordon taken as the Shim's", a.Node.Name)
			}
		case Release:
			rec, ok := record.DisruptedBy(byName[a.Node].Node, obs.Shim.Name)
			if !ok || a.Uncordon && !rec.Cordoned {
				t.Errorf("node %s uncordoned: its record %+v (%v) says the cordon is not the Shim's", a.Node, rec, ok)
			}
		case Evict:
			if _, ok := record.DisruptedBy(byName[a.Node].Node, obs.Shim.Name); !ok {
				t.Errorf("pod %s/%s evicted from %s, a node the Shim does not drain", a.Namespace, a.Name, a.Node)
			}
		}
	}
	for _, a := range flatten(p.Evict) {
		e := a.(Evict)
		if obs.Shim.DeletionTimestamp.IsZero() || obs.Shim.Spec.DeletePolicy != v1alpha1.DeleteEvict || len(obs.Pods[e.Node]) == 0 {
			t.Errorf("pod %s/%s evicted from %s: the Shim is not deleted with deletePolicy Evict, or runs no pod there", e.Namespace, e.Name, e.Node)
		}
	}
}
