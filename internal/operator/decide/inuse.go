package decide

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"slices"
	"strings"
	"time"

	"github.com/shimkit/shimkit/internal/nodelabel/record"

	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/rollout"
)

// InUseRetry is how long after a node's installer found pod sandboxes
// using a handler it would remove (plan.ReasonHandlerInUse) the node is
// tried again, once the API server shows none of its pods there (the
// runtime knows of pods the API server does not: static pods, pods being
// torn down).
const InUseRetry = 30 * time.Second

// InUseRecheck is how often a Shim whose removal waits for pods looks
// again (the operator watches no pods).
const InUseRecheck = 10 * time.Second

// Hold marks the planner node n of v held while pods use the shim there,
// and notes them in v.InUse: for a removal, the pods of the Shim's
// RuntimeClasses the API server shows on the node; for either operation,
// the sandboxes its installer found less than InUseRetry ago.
func (s *Snapshot) Hold(v *NodeView, n *rollout.Node, removing bool) {
	v.InUse = nil
	if removing {
		v.InUse = s.Pods[v.Node.Name]
	}
	if j := v.Job; len(v.InUse) == 0 && j != nil && j.InUse() && s.Now.Before(j.Ended().Add(InUseRetry)) {
		for _, sb := range j.Result.InUse {
			v.InUse = append(v.InUse, sb.String())
		}
		if len(v.InUse) == 0 {
			v.InUse = []string{"pod sandboxes"}
		}
	}
	n.Held = len(v.InUse) > 0
}

// FenceTaint is the taint that fences a node the Shim no longer targets
// while pods of its RuntimeClasses run there (Fences): NoSchedule, which
// a restarted kubelet does not check against its running pods (it
// re-checks labels, and NoExecute taints), so they run on. It keeps off
// every new pod that does not tolerate it, the Shim's and others'.
func FenceTaint(shim string) corev1.Taint {
	return corev1.Taint{Key: record.Key(shim), Value: LabelFenced, Effect: corev1.TaintEffectNoSchedule}
}

// HasFence: the node carries the Shim's fence taint, exactly (a taint of
// the key someone else wrote is not the Shim's).
func HasFence(node *corev1.Node, shim string) bool {
	f := FenceTaint(shim)
	return slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.MatchTaint(&f) && t.Value == f.Value })
}

// Fences are what a Shim whose spec no longer targets a node does on the
// nodes it holds for their pods (d.Removal.Held) that still carry its
// installed label: the node is tainted (FenceTaint), never relabelled,
// with a Warning naming the pods, once. A node fenced that is no longer
// held so (its pods gone and its removal starting, or targeted again)
// loses the taint; a deleted Shim's fence is its RuntimeClasses'
// (ClassFences), and its nodes lose theirs (fenced: false).
func Fences(s *Snapshot, d *Decision, fencing bool) []Action {
	want := map[string]bool{}
	if fencing {
		for _, name := range d.Removal.Held {
			if v := d.ByName[name]; v != nil && v.Label == record.Installed {
				want[name] = true
			}
		}
	}
	var out Together
	for i := range s.Views {
		v := &s.Views[i]
		has := HasFence(v.Node, s.Shim.Name)
		switch {
		case want[v.Node.Name] && !has:
			out = append(out, InOrder{Fence{Node: v.Node, Taint: FenceTaint(s.Shim.Name)}, inUseWarning(s, v)})
		case !want[v.Node.Name] && has:
			out = append(out, Unfence{Node: v.Node, Taint: FenceTaint(s.Shim.Name)})
		}
	}
	if len(out) == 0 {
		return nil
	}
	return []Action{out}
}

// ClassFences are what a deleted Shim's removal does while it holds
// nodes for their pods: its RuntimeClasses are fenced (FenceClasses; the
// nodes' labels stay as the pods were admitted with them), and each held
// node is told in a Warning naming its pods, once: when the classes are
// fenced.
func ClassFences(s *Snapshot, d *Decision) (ClassPlan, []Action) {
	steps := FenceClasses(s)
	if len(steps) == 0 {
		return ClassPlan{}, nil
	}
	var warn []Action
	for _, name := range d.Removal.Held {
		if v := d.ByName[name]; v != nil {
			warn = append(warn, inUseWarning(s, v))
		}
	}
	return ClassPlan{Ensures: steps}, warn
}

// inUseWarning tells that the node's shim stays for its pods.
func inUseWarning(s *Snapshot, v *NodeView) Notice {
	return Notice{Node: v.Node, Type: corev1.EventTypeWarning, Reason: v1alpha1.ReasonHandlerInUse, Action: "Uninstall",
		Note: fmt.Sprintf("node %s: the shim stays while pods run with it; no new pod lands there: %s", v.Node.Name, InUseNote([]NodeView{*v}, []string{v.Node.Name}))}
}

// Eviction is a pod a deleted Shim evicts (spec.deletePolicy Evict)
// from a node its removal waits on.
type Eviction struct{ Node, Namespace, Name string }

// Evictions are the pods a deleted Shim with spec.deletePolicy Evict
// evicts: those the API server shows on the nodes its removal holds, on
// as many nodes as maxUpdate leaves free beside the nodes changing and
// starting (the nodes in the planner's order of names). The sandboxes
// only the node's installer found (a static pod) are not the API
// server's to evict: those nodes wait.
func Evictions(s *Snapshot, d *Decision, starting int) []Eviction {
	if s.Shim.Spec.DeletePolicy != v1alpha1.DeleteEvict || s.Shim.DeletionTimestamp.IsZero() {
		return nil
	}
	free := d.Removal.Budget - d.Removal.InFlight - starting
	var out []Eviction
	for _, name := range d.Removal.Held {
		pods := s.Pods[name]
		if len(pods) == 0 {
			continue
		}
		if free <= 0 {
			break
		}
		free--
		for _, p := range pods {
			ns, pod, _ := strings.Cut(p, "/")
			out = append(out, Eviction{Node: name, Namespace: ns, Name: pod})
		}
	}
	return out
}

// maxPodsNamed is how many pods a note names per node, and maxNodesNamed
// how many nodes.
const (
	maxPodsNamed  = 3
	maxNodesNamed = 5
)

// InUseNote says which nodes wait for which pods: "node n1: default/a,
// default/b; node n2: 4 pods (x/c, x/d, x/e, …)".
func InUseNote(views []NodeView, held []string) string {
	byName := make(map[string]*NodeView, len(held))
	for i := range views {
		byName[views[i].Node.Name] = &views[i]
	}
	var parts []string
	for _, name := range held[:min(len(held), maxNodesNamed)] {
		var pods []string
		if v := byName[name]; v != nil {
			pods = v.InUse
		}
		named := strings.Join(pods[:min(len(pods), maxPodsNamed)], ", ")
		if len(pods) > maxPodsNamed {
			named = fmt.Sprintf("%d pods (%s, …)", len(pods), named)
		}
		parts = append(parts, "node "+name+": "+named)
	}
	if more := len(held) - maxNodesNamed; more > 0 {
		parts = append(parts, fmt.Sprintf("%d more nodes", more))
	}
	return strings.Join(parts, "; ")
}

// deletingNote says what a deleted Shim's removal does: how many nodes it
// is removed from, and which wait for the pods that use it.
func deletingNote(u Rollup) (reason, msg string) {
	msg = fmt.Sprintf("removing the shim from %d nodes", u.Removal.Remaining)
	if len(u.Removal.Held) == 0 {
		return v1alpha1.ReasonDeleting, msg
	}
	wait := "wait for the pods that run with it"
	if u.Shim.Spec.DeletePolicy == v1alpha1.DeleteEvict {
		wait = "wait for the pods that run with it, evicted as their PodDisruptionBudgets allow (deletePolicy Evict)"
	}
	return v1alpha1.ReasonHandlerInUse, fmt.Sprintf("%s; %d %s: %s", msg, len(u.Removal.Held), wait, InUseNote(u.Nodes, u.Removal.Held))
}
