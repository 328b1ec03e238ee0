package operator

import (
	"errors"
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
