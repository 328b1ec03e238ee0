package decide

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/shimkit/shimkit/internal/nodelabel/record"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// DefaultDrainTimeout is a drain's timeout when the Shim sets none.
const DefaultDrainTimeout = 5 * time.Minute

// mirrorAnnotation marks the API server's mirror of a static pod: not
// evicted (the kubelet runs it from a file).
const mirrorAnnotation = "kubernetes.io/config.mirror"

// Cordon marks the node unschedulable for the Shim and records it
// (DisruptionKey), committed only on the node as read (its
// resourceVersion): Cordoned says the Shim sets the cordon (the node was
// schedulable), else the node stays as it is and only the record is
// written.
type Cordon struct {
	Node      *corev1.Node
	Shim      string
	Disrupted record.Disrupted
}

// Release removes the Shim's disruption record from the node and, when
// the Shim set the cordon (Uncordon), lifts it.
type Release struct {
	Node     string
	Shim     string
	Uncordon bool
}

func (Cordon) action()  {}
func (Release) action() {}

// disruptionOf is the Shim's disruption policy (nil: none).
func disruptionOf(shim *v1alpha1.Shim) *v1alpha1.Disruption {
	rs := shim.Spec.RolloutStrategy
	if rs == nil || rs.Disruption == nil || rs.Disruption.Policy == v1alpha1.DisruptNone || rs.Disruption.Policy == "" {
		return nil
	}
	return rs.Disruption
}

// drainTimeout is the Shim's drain timeout.
func drainTimeout(d *v1alpha1.Disruption) time.Duration {
	if d.Timeout != nil && d.Timeout.Duration > 0 {
		return d.Timeout.Duration
	}
	return DefaultDrainTimeout
}

// Blocked is a pod a drain cannot evict now, and why.
type Blocked struct {
	Pod string `json:"pod"`
	Why string `json:"why"`
}

// DrainPods sorts the pods of a node a drain under d looks at: those to
// evict, those it waits for (being deleted already), and those that
// block it, with why (a DaemonSet's without ignoreDaemonSets, emptyDir
// data without deleteEmptyDirData, or a PodDisruptionBudget that allows
// no disruption now). Ended pods, static pods' mirrors, pods the
// selector leaves out and the operator's own namespace's pods (its
// installers) are left alone.
func DrainPods(pods []*corev1.Pod, d *v1alpha1.Disruption, budgets []*policyv1.PodDisruptionBudget, operatorNS string) (evict []*corev1.Pod, waiting []string, blocked []Blocked) {
	var sel labels.Selector = labels.Everything()
	if d.PodSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(d.PodSelector)
		if err != nil {
			return nil, nil, []Blocked{{Pod: "*", Why: "podSelector: " + err.Error()}}
		}
		sel = s
	}
	ignoreDS := d.IgnoreDaemonSets == nil || *d.IgnoreDaemonSets
	for _, p := range pods {
		name := p.Namespace + "/" + p.Name
		switch {
		case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed,
			p.Annotations[mirrorAnnotation] != "", p.Namespace == operatorNS, !sel.Matches(labels.Set(p.Labels)):
		case p.DeletionTimestamp != nil:
			waiting = append(waiting, name)
		case daemonSetPod(p):
			if !ignoreDS {
				blocked = append(blocked, Blocked{Pod: name, Why: "a DaemonSet's pod (set ignoreDaemonSets)"})
			}
		case hasEmptyDir(p) && !d.DeleteEmptyDirData:
			blocked = append(blocked, Blocked{Pod: name, Why: "emptyDir data (set deleteEmptyDirData)"})
		default:
			if why := BudgetBlocks(p, budgets); why != "" {
				blocked = append(blocked, Blocked{Pod: name, Why: why})
			}
			evict = append(evict, p)
		}
	}
	return evict, waiting, blocked
}

func daemonSetPod(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.OwnerReferences, func(o metav1.OwnerReference) bool {
		return o.Kind == "DaemonSet" && o.Controller != nil && *o.Controller
	})
}

func hasEmptyDir(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.EmptyDir != nil })
}

// BudgetBlocks says which PodDisruptionBudget of the pod's namespace that
// selects it allows no disruption now ("": none).
func BudgetBlocks(p *corev1.Pod, budgets []*policyv1.PodDisruptionBudget) string {
	for _, b := range budgets {
		if b.Namespace != p.Namespace || b.Spec.Selector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		if b.Status.DisruptionsAllowed <= 0 {
			return fmt.Sprintf("PodDisruptionBudget %s/%s allows no disruption now (%d healthy, %d desired)",
				b.Namespace, b.Name, b.Status.CurrentHealthy, b.Status.DesiredHealthy)
		}
	}
	return ""
}

// disruptStep is what a node about to change needs first under the
// Shim's disruption policy: nothing (ready: start its Job), or the
// actions that cordon or drain it, or that fail it at the drain's
// timeout. It reads the snapshot's pods and budgets of the node.
func disruptStep(s *Snapshot, v *NodeView, op string) (ready bool, acts []Action) {
	d := disruptionOf(s.Shim)
	if d == nil {
		return true, nil
	}
	rec, ok := record.DisruptedBy(v.Node, s.Shim.Name)
	if !ok {
		rec = record.Disrupted{Since: s.Now.UTC().Truncate(time.Second), Cordoned: !v.Node.Spec.Unschedulable}
		return false, []Action{Cordon{Node: v.Node, Shim: s.Shim.Name, Disrupted: rec},
			Note{Reason: "Cordoned", Action: OpAction(op), Detail: "node " + v.Node.Name}}
	}
	if d.Policy == v1alpha1.DisruptCordon {
		return true, nil
	}
	evict, waiting, blocked := DrainPods(s.NodePods[v.Node.Name], d, s.Budgets, s.OperatorNamespace)
	if len(evict)+len(waiting)+len(blocked) == 0 {
		return true, nil
	}
	if !s.Now.Before(rec.Since.Add(drainTimeout(d))) {
		return false, drainFailed(s, v, op, rec, len(evict)+len(waiting), blocked)
	}
	var out Together
	for _, p := range evict {
		out = append(out, evictPod(s.Shim, Eviction{Node: v.Node.Name, Namespace: p.Namespace, Name: p.Name}, d.GracePeriodSeconds))
	}
	return false, []Action{out}
}

// DrainNote says which nodes the Shim is draining now and what is left
// on each (the pods still to go, and what keeps them, with the drain's
// deadline), for the status while the drain runs: "draining n1 until
// 12:05:00Z: 2 pods left (default/web-1, default/web-2); default/web-1:
// PodDisruptionBudget ... allows no disruption now". "": none drains.
func DrainNote(s *Snapshot) string {
	d := disruptionOf(s.Shim)
	if d == nil || d.Policy != v1alpha1.DisruptDrain {
		return ""
	}
	var notes []string
	for i := range s.Views {
		v := &s.Views[i]
		rec, ok := record.DisruptedBy(v.Node, s.Shim.Name)
		if !ok || v.Job != nil && v.Job.Running() {
			continue
		}
		evict, waiting, blocked := DrainPods(s.NodePods[v.Node.Name], d, s.Budgets, s.OperatorNamespace)
		left := append(waiting, podNames(evict)...)
		for _, b := range blocked {
			if !slices.Contains(left, b.Pod) {
				left = append(left, b.Pod)
			}
		}
		if len(left) == 0 {
			continue
		}
		slices.Sort(left)
		note := fmt.Sprintf("draining %s until %s: %d pods left (%s)", v.Node.Name, rec.Since.Add(drainTimeout(d)).UTC().Format(time.RFC3339),
			len(left), strings.Join(left[:min(len(left), maxPodsNamed)], ", "))
		for _, b := range blocked[:min(len(blocked), maxPodsNamed)] {
			note += "; " + b.Pod + ": " + b.Why
		}
		notes = append(notes, note)
	}
	return strings.Join(notes, "; ")
}

func podNames(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Namespace + "/" + p.Name
	}
	return out
}

// drainFailed fails the node whose drain timed out (DrainBlocked, naming
// the pods left and what keeps them) and releases it: it is not changed.
func drainFailed(s *Snapshot, v *NodeView, op string, rec record.Disrupted, left int, blocked []Blocked) []Action {
	var why []string
	for _, b := range blocked[:min(len(blocked), maxPodsNamed)] {
		why = append(why, b.Pod+": "+b.Why)
	}
	msg := fmt.Sprintf("%d pods not gone within the drain's timeout; the node was not changed", max(left, len(blocked)))
	if len(why) > 0 {
		msg += ": " + strings.Join(why, "; ")
	}
	f := record.Failure{ShimUID: s.Shim.UID, Op: op, SpecHash: s.JobHash(v, op), Reason: v1alpha1.ReasonDrainBlocked, Message: msg,
		Time: s.Now.UTC().Truncate(time.Second), Machine: record.Machine(v.Node)}
	return []Action{InOrder{
		MarkFailed{Node: v.Node.Name, Shim: s.Shim.Name, Failure: f},
		Release{Node: v.Node.Name, Shim: s.Shim.Name, Uncordon: rec.Cordoned},
		Notice{Node: v.Node, Type: corev1.EventTypeWarning, Reason: v1alpha1.ReasonDrainBlocked, Action: OpAction(op), Note: FailureNote(v.Node.Name, v1alpha1.ReasonDrainBlocked, msg)},
	}}
}

// Releases lift the Shim's disruption of the nodes it no longer goes on
// changing: a node with the Shim's record whose Job is not running and
// that is not started now, once it is where the rollout wants it, failed,
// or the rollout holds (halted, paused, outside its window, baking, a
// refused spec). A node the rollout still means to change keeps its
// cordon while the start waits (for the node gate, the other Shims'
// offers), so that it is not cordoned twice.
func Releases(s *Snapshot, d *Decision, busy map[string]bool) []Action {
	var out Together
	for i := range s.Views {
		v := &s.Views[i]
		rec, ok := record.DisruptedBy(v.Node, s.Shim.Name)
		if !ok || busy[v.Node.Name] || v.Held || v.Job != nil && v.Job.Running() || stillToChange(s, d, v) {
			continue
		}
		out = append(out, Release{Node: v.Node.Name, Shim: s.Shim.Name, Uncordon: rec.Cordoned})
	}
	if len(out) == 0 {
		return nil
	}
	return []Action{out}
}

// stillToChange: the rollout goes on and means to change the node: an
// install it lacks, or the removal of the Shim it has.
func stillToChange(s *Snapshot, d *Decision, v *NodeView) bool {
	if v.FailedNode() || d.Delivered.Hold != HoldNone {
		return false
	}
	if !s.Shim.DeletionTimestamp.IsZero() || !v.Targeted() {
		return v.Touched() && !d.Removal.Halted && !v.Preinstalled
	}
	return v.NeedsInstall(s.Hash) && !d.Rollin.Halted && s.Refusal == nil
}

// Evict evicts a pod of a node being drained, with the drain's grace
// period (nil: the pod's own).
type Evict struct {
	Shim *v1alpha1.Shim
	Eviction
	GracePeriodSeconds *int64
	// Evicted is said once the API server evicted the pod, Blocked with
	// its answer when it refused (a PodDisruptionBudget: the pod is asked
	// again at the next reconcile); a pod gone already says nothing.
	Evicted, Blocked Notice
}

// evictPod is the Eviction of the pod, with its Events.
func evictPod(shim *v1alpha1.Shim, e Eviction, grace *int64) Evict {
	pod := e.Namespace + "/" + e.Name
	return Evict{Shim: shim, Eviction: e, GracePeriodSeconds: grace,
		Evicted: Notice{Type: corev1.EventTypeNormal, Reason: "Evicted", Action: "Evict", Note: "pod " + pod + " on node " + e.Node + " evicted"},
		Blocked: Notice{Type: corev1.EventTypeWarning, Reason: "EvictionBlocked", Action: "Evict", Note: "pod " + pod + " on node " + e.Node}}
}

func (Evict) action() {}

// disruptStarts applies the Shim's disruption policy to the plan's starts:
// a node not yet cordoned, or not yet drained, does not start; the
// actions that get it there (or fail it at the drain's timeout) come
// instead; and the nodes the Shim disrupted that it no longer changes
// on changing are released (Releases). held: a start waits for its
// node's disruption.
func disruptStarts(s *Snapshot, d *Decision, starts []Start) (kept []Start, acts []Action, held bool) {
	busy := make(map[string]bool, len(starts))
	for _, st := range starts {
		busy[st.View.Node.Name] = true
		if st.Op == jobview.OpVerify {
			kept = append(kept, st)
			continue
		}
		ready, a := disruptStep(s, st.View, st.Op)
		if ready {
			kept = append(kept, st)
			continue
		}
		acts, held = append(acts, a...), true
	}
	return kept, append(acts, Releases(s, d, busy)...), held
}
