package decide

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// maxSkippedNames is how many node names status.skipped lists per reason.
const maxSkippedNames = 10

// SkippedNodes groups the skipped matching nodes by reason, for the status:
// a count per reason and the first node names, in reason order.
func SkippedNodes(views []NodeView) (total int32, groups []v1alpha1.SkippedNodes) {
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

// ImageSources groups the targeted nodes that get the Shim's image by how
// (NodeView.ImageWay), for the status: a count per way and the first node
// names, in way order.
func ImageSources(views []NodeView) []v1alpha1.ImageSourceNodes {
	byWay := map[string]*v1alpha1.ImageSourceNodes{}
	for _, v := range views {
		if !v.Targeted() || v.Preinstalled || v.ImageWay == "" {
			continue
		}
		g := byWay[v.ImageWay]
		if g == nil {
			g = &v1alpha1.ImageSourceNodes{Way: v.ImageWay}
			byWay[v.ImageWay] = g
		}
		g.Count++
		g.Nodes = append(g.Nodes, v.Node.Name)
	}
	var groups []v1alpha1.ImageSourceNodes
	for _, way := range slices.Sorted(maps.Keys(byWay)) {
		g := byWay[way]
		slices.Sort(g.Nodes)
		g.Nodes = g.Nodes[:min(len(g.Nodes), maxSkippedNames)]
		groups = append(groups, *g)
	}
	return groups
}

// SkippedNote says how many nodes were skipped and why, for the Ready
// condition, with what to do about the reasons a node's image can answer
// (SkipHint): "; 3 nodes skipped: NoArtifact 1 (rv-1: linux/riscv64);
// NotLinux 2 (win-1: windows, win-2: windows)", or "".
func SkippedNote(views []NodeView) string {
	total, groups := SkippedNodes(views)
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
		part := fmt.Sprintf("%s %d (%s%s)", g.Reason, g.Count, strings.Join(names, ", "), more)
		if h := SkipHint(g.Reason); h != "" {
			part += ": " + h
		}
		parts = append(parts, part)
	}
	return fmt.Sprintf("; %d %s skipped: %s", total, plural(int(total), "node", "nodes"), strings.Join(parts, "; "))
}

// SkipHint says what lets nodes skipped for reason run the shim when it
// is a change to their image or to the operator's flags ("" for the
// other reasons): a read-only or immutable host is skipped, not failed,
// and its runtime can come with its image (a preinstalled Shim).
func SkipHint(reason string) string {
	switch reason {
	case v1alpha1.SkipReadOnlyHost:
		return "bake the runtime into the node image and select these nodes with spec.preinstalledOn, or, where the directory named is the bundle root or the link directory, move it to a writable, executable one (the operator's --bundle-root, --link-dir)"
	case v1alpha1.SkipImmutableOS:
		return "bake the runtime into the node image (a Talos system extension, a Bottlerocket variant, examples/image-builder) and select these nodes with spec.preinstalledOn"
	case v1alpha1.SkipRuntimeNotSupported:
		return "list the node's runtime in spec.containerRuntimes if the Shim's handlers run on it (shimkit installs into containerd and cri-o; an OCI runtime run through runtimeOptions.BinaryName runs on both by default), or select only the nodes of its runtimes with spec.nodeSelector"
	}
	return ""
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
