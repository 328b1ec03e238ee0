package nodeview

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// RuntimeOf is the node's container runtime as its kubelet reports it
// (status.nodeInfo.containerRuntimeVersion, such as containerd://2.1.4):
// containerd (k3s's and RKE2's embedded one too), cri-o, another
// runtime's name, or "" when the kubelet has not reported one yet.
func RuntimeOf(node *corev1.Node) string {
	name, _, ok := strings.Cut(node.Status.NodeInfo.ContainerRuntimeVersion, "://")
	if !ok {
		return ""
	}
	return name
}

// runtimeDetail names the node's runtime and what the Shim runs on (the
// skip's hint, decide.SkipHint, says how to change that).
func runtimeDetail(shim *v1alpha1.Shim, node *corev1.Node) string {
	return fmt.Sprintf("%s; the Shim runs on %s", node.Status.NodeInfo.ContainerRuntimeVersion, strings.Join(shim.Spec.Runtimes(), ", "))
}

// Skip says why a node that matches the selector cannot run the shim.
type Skip struct {
	// Reason is one of v1alpha1.SkipNotLinux, SkipRuntimeNotSupported,
	// SkipImmutableOS, SkipHandlerNotReported, SkipNoArtifact
	// (Eligibility), or SkipReadOnlyHost (decide.ReadOnlyHost).
	Reason string
	// Detail says what the node has instead ("windows", "cri-o://1.31.0",
	// "linux/riscv64").
	Detail string
}

// Eligibility returns why the node cannot run the shim, or nil. A node
// is eligible when it is Linux (its kubernetes.io/os label, else
// status.nodeInfo.operatingSystem), runs one of the Shim's container
// runtimes (status.nodeInfo.containerRuntimeVersion: containerd://...,
// cri-o://...; spec.containerRuntimes), and the Shim has an artifact for
// its platform. A value the node does not report
// (no kubelet has posted its status yet) rules nothing out.
//
// A node whose image has the shim (preinstalled) is eligible once its
// kubelet reports every handler of the Shim, whatever its runtime; an
// immutable OS is no reason to skip it (its runtimes come with its image).
func Eligibility(shim *v1alpha1.Shim, node *corev1.Node, preinstalled bool) *Skip {
	if name := osOf(node); name != "" && name != "linux" {
		return &Skip{Reason: v1alpha1.SkipNotLinux, Detail: name}
	}
	if preinstalled {
		if why := HandlerNotReported(shim, node); why != "" {
			return &Skip{Reason: v1alpha1.SkipHandlerNotReported, Detail: why}
		}
		return nil
	}
	if rt := RuntimeOf(node); rt != "" && !shim.Spec.SupportsRuntime(rt) {
		return &Skip{Reason: v1alpha1.SkipRuntimeNotSupported, Detail: runtimeDetail(shim, node)}
	}
	if image := node.Status.NodeInfo.OSImage; immutableOS(image) {
		return &Skip{Reason: v1alpha1.SkipImmutableOS, Detail: image}
	}
	if _, ok := HTTPArtifact(shim.Spec.FetchStrategy, PlatformOf(node)); !ok {
		return &Skip{Reason: v1alpha1.SkipNoArtifact, Detail: PlatformOf(node)}
	}
	return nil
}

// HandlerNotReported says why the node's kubelet does not show that its
// image serves the Shim ("": it reports every handler).
func HandlerNotReported(shim *v1alpha1.Shim, node *corev1.Node) string {
	if len(node.Status.RuntimeHandlers) == 0 {
		return "its kubelet reports no runtime handlers (containerd 2.0+ and kubelet 1.30+ do)"
	}
	if h := MissingHandler(node, HandlerNames(shim)); h != "" {
		return "handler " + h + " is not reported"
	}
	return ""
}

// HandlerNames are the runtime handlers a node with the Shim serves.
func HandlerNames(shim *v1alpha1.Shim) []string {
	out := []string{shim.Spec.RuntimeClass.HandlerName()}
	for _, h := range shim.Spec.Handlers {
		out = append(out, h.RuntimeClass.HandlerName())
	}
	return out
}

// MissingHandler returns a handler of the Shim that the node's kubelet
// does not report (node.status.runtimeHandlers, from containerd's CRI
// status: containerd 2.0 and later, kubelet 1.30 and later), or "" when
// it reports them all or reports none (an older containerd or kubelet:
// nothing to tell from).
func MissingHandler(node *corev1.Node, handlers []string) string {
	if len(node.Status.RuntimeHandlers) == 0 {
		return ""
	}
	for _, h := range handlers {
		if !slices.ContainsFunc(node.Status.RuntimeHandlers, func(r corev1.NodeRuntimeHandler) bool { return r.Name == h }) {
			return h
		}
	}
	return ""
}

// immutableOSes start the osImage of the immutable operating systems
// (no writable /etc or /opt), lower-cased: Talos ("Talos (v1.9.0)") and
// Bottlerocket ("Bottlerocket OS 1.26.0 (aws-k8s-1.31)").
var immutableOSes = []string{"talos", "bottlerocket"}

// immutableOS: the node's OS image is one of immutableOSes.
func immutableOS(osImage string) bool {
	image := strings.ToLower(osImage)
	return slices.ContainsFunc(immutableOSes, func(p string) bool { return strings.HasPrefix(image, p) })
}

// osOf is the node's operating system as it reports it, or "".
func osOf(node *corev1.Node) string {
	if name := node.Labels[corev1.LabelOSStable]; name != "" {
		return name
	}
	return node.Status.NodeInfo.OperatingSystem
}

// HTTPArtifact is the HTTP artifact of the Shim for the platform: the
// one spec.fetchStrategy.anonHttp.platforms lists for it, else the one
// for every platform (Platform empty); false when there is none. Any other
// fetch type resolves to the node's platform itself: true, and no
// artifact.
func HTTPArtifact(fs v1alpha1.FetchStrategy, platform string) (v1alpha1.PlatformArtifact, bool) {
	if fs.Type != v1alpha1.FetchAnonHTTP || fs.AnonHTTP == nil {
		return v1alpha1.PlatformArtifact{}, true
	}
	h := fs.AnonHTTP
	for _, pa := range h.Platforms {
		if pa.Platform == platform {
			return pa, true
		}
	}
	return v1alpha1.PlatformArtifact{Location: h.Location, SHA256: h.SHA256, Signature: h.Signature}, h.Location != ""
}
