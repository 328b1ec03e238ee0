package decide

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/internal/nodelabel/record"
	"strings"
	"time"

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

// Fences are what a Shim whose spec no longer targets a node does on the
// nodes it holds for their pods (d.Removal.Held) that still carry the
// Shim's installed label: the label becomes LabelUninstalling, so that no
// new pod of the Shim's RuntimeClasses lands there, with a Warning naming
// the pods, once.
func Fences(s *Snapshot, d *Decision) []Action {
	var out Together
	for _, name := range d.Removal.Held {
		v := d.ByName[name]
		if v == nil || v.Label != record.Installed {
			continue
		}
		out = append(out, InOrder{Fence{Node: name, Shim: s.Shim.Name}, inUseWarning(s, v)})
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
func inUseWarning(s *Snapshot, v *NodeView) EmitEvent {
	return EmitEvent{Shim: s.Shim, Related: v.Node, Type: corev1.EventTypeWarning, Reason: v1alpha1.ReasonHandlerInUse, Action: "Uninstall",
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
