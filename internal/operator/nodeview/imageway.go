package nodeview

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/shimkit/shimkit/internal/operator/nodejob"
)

// What serves image volumes: the API server and the kubelet from 1.35
// (the ImageVolume gate beta, on by default), containerd from 2.1.
var (
	imageVolumeKube       = version.MajorMinor(1, 35)
	imageVolumeContainerd = version.MajorMinor(2, 1)
)

// ImageWay is how the node's installer gets a Shim's image: an image
// volume (nodejob.ImageVolume) where the API server (server, its
// gitVersion), the node's kubelet and its containerd all serve them, the
// copy by init containers (nodejob.ImageCopy) otherwise, an unknown
// version included: an API server without the gate would drop the volume
// from the pod, a runtime without it would fail the pod.
func ImageWay(server string, node *corev1.Node) string {
	info := node.Status.NodeInfo
	runtime, ok := strings.CutPrefix(info.ContainerRuntimeVersion, "containerd://")
	if ok && atLeast(server, imageVolumeKube) && atLeast(info.KubeletVersion, imageVolumeKube) && atLeast(runtime, imageVolumeContainerd) {
		return nodejob.ImageVolume
	}
	return nodejob.ImageCopy
}

// atLeast reports whether v (such as v1.36.0, 2.2.0+unknown) is min or
// later; an unreadable v is not.
func atLeast(v string, min *version.Version) bool {
	parsed, err := version.ParseGeneric(v)
	return err == nil && parsed.AtLeast(min)
}
