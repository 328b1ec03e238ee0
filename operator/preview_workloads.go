package operator

import (
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/internal/operator/workload"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// Workloads are what a preview reads of the cluster's workloads to say
// what a change does to them: the pods, and the PodDisruptionBudgets.
type Workloads struct {
	Pods    []*corev1.Pod
	Budgets []*policyv1.PodDisruptionBudget
}

// BlockedPod is a pod that keeps a node from emptying, and why.
type BlockedPod = decide.Blocked

// NodeDrain is what the drain of a node before the rollout changes it
// would do now (rolloutStrategy.disruption Drain): the pods it evicts,
// those it waits for (being deleted already), and those that keep the
// node from emptying, with why (a PodDisruptionBudget that allows no
// disruption now quoted, emptyDir data, a DaemonSet's pod).
type NodeDrain struct {
	Node    string       `json:"node"`
	Evict   []string     `json:"evict,omitempty"`
	Waiting []string     `json:"waiting,omitempty"`
	Blocked []BlockedPod `json:"blocked,omitempty"`
}

// PreviewDrains says, for a Shim that drains nodes before it changes
// them, what the drain of each node its preview's waves install would
// do, in wave order, as the operator's drain decides it (decide.DrainPods)
// on the pods and budgets as they are now. None for another policy.
func PreviewDrains(p *Preview, w Workloads, opts Options) []NodeDrain {
	d := disruptionOf(p.Shim)
	if d == nil || d.Policy != v1alpha1.DisruptDrain {
		return nil
	}
	ns := opts.withDefaults().Namespace
	var out []NodeDrain
	for _, wave := range p.Waves {
		for _, node := range wave.Install {
			evict, waiting, blocked := decide.DrainPods(podsOf(w.Pods, node), d, w.Budgets, ns)
			nd := NodeDrain{Node: node, Waiting: waiting, Blocked: blocked}
			for _, pod := range evict {
				nd.Evict = append(nd.Evict, pod.Namespace+"/"+pod.Name)
			}
			out = append(out, nd)
		}
	}
	return out
}

func disruptionOf(shim *v1alpha1.Shim) *v1alpha1.Disruption {
	if rs := shim.Spec.RolloutStrategy; rs != nil {
		return rs.Disruption
	}
	return nil
}

// podsOf are the pods bound to the node.
func podsOf(pods []*corev1.Pod, node string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if p.Spec.NodeName == node {
			out = append(out, p)
		}
	}
	return out
}

// RemovalPreview is what deleting a Shim would do now: the nodes whose
// uninstall starts at once (at most maxUpdate), those that follow, the
// nodes whose uninstall waits for pods of the Shim's RuntimeClasses, and
// the RuntimeClasses deleted once the last node is clean.
type RemovalPreview struct {
	Shim string `json:"shim"`
	// Uninstall are the nodes uninstalled at once; Later those uninstalled
	// as these end.
	Uninstall []string `json:"uninstall,omitempty"`
	Later     []string `json:"later,omitempty"`
	// Waiting are the nodes whose uninstall waits for their pods: for ever
	// under deletePolicy Wait (the pods must go), or until they are
	// evicted under Evict (Evict true), which a PodDisruptionBudget may
	// refuse.
	Waiting []NodePods `json:"waiting,omitempty"`
	Evict   bool       `json:"evict,omitempty"`
	// RuntimeClasses are deleted last, once every node is clean.
	RuntimeClasses []string `json:"runtimeClasses,omitempty"`
}

// NodePods are the pods of a Shim's RuntimeClasses on a node, and those a
// PodDisruptionBudget would keep from an eviction now.
type NodePods struct {
	Node    string       `json:"node"`
	Pods    []string     `json:"pods"`
	Blocked []BlockedPod `json:"blocked,omitempty"`
}

// PreviewRemoval decides, as the operator's reconcile of the deleted
// Shim would now (decide.DecideRemoval), what deleting shim does on the
// nodes, with the operator's Jobs and their results, and the cluster's
// pods and budgets. It writes nothing.
func PreviewRemoval(shim *v1alpha1.Shim, nodes []*corev1.Node, jobs []*batchv1.Job, result func(*batchv1.Job) *plan.NodeResult, w Workloads, opts Options, now time.Time) (*RemovalPreview, error) {
	opts = opts.withDefaults()
	s := shim.DeepCopy()
	if s.DeletionTimestamp.IsZero() {
		at := metav1.NewTime(now)
		s.DeletionTimestamp = &at
	}
	var classes []string
	for _, c := range shimspec.Classes(s) {
		classes = append(classes, c.Name)
	}
	obs, err := observePreview(world{Shim: s, Nodes: nodes, Jobs: jobs, Now: now, RolloutNow: now, Result: decide.FinishedResult(result)},
		previewReads{pods: workload.ByNode(w.Pods, classes)}, opts)
	if err != nil {
		return nil, err
	}
	obs, _, err = decide.Records(obs)
	if err != nil {
		return nil, err
	}
	// DecideRemoval notes on obs's views (a copy, the records') the pods
	// each waits for.
	d, err := decide.DecideRemoval(obs, shimspec.Planner(s, obs.Hash), decide.Delivery(obs))
	if err != nil {
		return nil, err
	}
	r := &RemovalPreview{Shim: s.Name, Uninstall: slices.Sorted(slices.Values(d.Removal.Start)), Evict: s.Spec.DeletePolicy == v1alpha1.DeleteEvict, RuntimeClasses: classes}
	for _, v := range obs.Views {
		name := v.Node.Name
		switch {
		case slices.Contains(d.Removal.Held, name):
			r.Waiting = append(r.Waiting, nodePods(name, v.InUse, w))
		case v.Touched() && !v.Preinstalled && !slices.Contains(d.Removal.Start, name):
			r.Later = append(r.Later, name)
		}
	}
	slices.Sort(r.Later)
	return r, nil
}

// nodePods are the node's pods its removal waits for, and for each the
// budget that would refuse its eviction now.
func nodePods(node string, pods []string, w Workloads) NodePods {
	np := NodePods{Node: node, Pods: pods}
	for _, p := range podsOf(w.Pods, node) {
		if !slices.Contains(pods, p.Namespace+"/"+p.Name) {
			continue
		}
		if why := decide.BudgetBlocks(p, w.Budgets); why != "" {
			np.Blocked = append(np.Blocked, BlockedPod{Pod: p.Namespace + "/" + p.Name, Why: why})
		}
	}
	return np
}
