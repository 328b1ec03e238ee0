package operator

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/operator/fleet"
)

// containerdRuntimePrefix starts the containerRuntimeVersion a kubelet
// reports for containerd (k3s's and RKE2's embedded one too).
const containerdRuntimePrefix = "containerd://"

// eligibility returns why the node cannot run the shim, or nil. A node
// is eligible when it is Linux (its kubernetes.io/os label, else
// status.nodeInfo.operatingSystem), runs containerd
// (status.nodeInfo.containerRuntimeVersion containerd://...), and the
// Shim has an artifact for its platform. A value the node does not report
// (no kubelet has posted its status yet) rules nothing out.
func eligibility(shim *v1alpha1.Shim, node *corev1.Node) *fleet.Skip {
	if name := osOf(node); name != "" && name != "linux" {
		return &fleet.Skip{Reason: v1alpha1.SkipNotLinux, Detail: name}
	}
	if rt := node.Status.NodeInfo.ContainerRuntimeVersion; rt != "" && !strings.HasPrefix(rt, containerdRuntimePrefix) {
		return &fleet.Skip{Reason: v1alpha1.SkipNotContainerd, Detail: rt}
	}
	if _, err := artifactFor(shim, node, nil); errors.Is(err, ErrNoArtifact) {
		return &fleet.Skip{Reason: v1alpha1.SkipNoArtifact, Detail: platformOf(node)}
	}
	return nil
}

// osOf is the node's operating system as it reports it, or "".
func osOf(node *corev1.Node) string {
	if name := node.Labels[corev1.LabelOSStable]; name != "" {
		return name
	}
	return node.Status.NodeInfo.OperatingSystem
}

// maxSkippedNames is how many node names status.skipped lists per reason.
const maxSkippedNames = 10

// skippedNodes groups the skipped matching nodes by reason, for the status:
// a count per reason and the first node names, in reason order.
func skippedNodes(views []fleet.NodeView) (total int32, groups []v1alpha1.SkippedNodes) {
	byReason := map[string]*v1alpha1.SkippedNodes{}
	for _, v := range views {
		if !v.Matching || v.Skip == nil {
			continue
		}
		total++
		g := byReason[v.Skip.Reason]
		if g == nil {
			g = &v1alpha1.SkippedNodes{Reason: v.Skip.Reason}
			byReason[v.Skip.Reason] = g
		}
		g.Count++
		g.Nodes = append(g.Nodes, v.Node.Name)
	}
	for _, reason := range slices.Sorted(maps.Keys(byReason)) {
		g := byReason[reason]
		slices.Sort(g.Nodes)
		g.Nodes = g.Nodes[:min(len(g.Nodes), maxSkippedNames)]
		groups = append(groups, *g)
	}
	return total, groups
}

// skippedNote says how many nodes were skipped and why, for the Ready
// condition: "; 3 nodes skipped: NoArtifact 1 (rv-1: linux/riscv64),
// NotLinux 2 (win-1, win-2)", or "".
func skippedNote(views []fleet.NodeView) string {
	total, groups := skippedNodes(views)
	if total == 0 {
		return ""
	}
	details := map[string]string{}
	for _, v := range views {
		if v.Matching && v.Skip != nil {
			details[v.Node.Name] = v.Skip.Detail
		}
	}
	parts := make([]string, 0, len(groups))
	for _, g := range groups {
		names := make([]string, len(g.Nodes))
		for i, n := range g.Nodes {
			names[i] = n + ": " + details[n]
		}
		more := ""
		if int(g.Count) > len(g.Nodes) {
			more = ", ..."
		}
		parts = append(parts, fmt.Sprintf("%s %d (%s%s)", g.Reason, g.Count, strings.Join(names, ", "), more))
	}
	return fmt.Sprintf("; %d %s skipped: %s", total, plural(int(total), "node", "nodes"), strings.Join(parts, ", "))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
