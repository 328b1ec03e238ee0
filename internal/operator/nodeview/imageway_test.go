package nodeview

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/internal/operator/nodejob"
)

func TestImageWay(t *testing.T) {
	node := func(kubelet, runtime string) *corev1.Node {
		return &corev1.Node{Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: kubelet, ContainerRuntimeVersion: runtime}}}
	}
	for _, tc := range []struct {
		name, server string
		node         *corev1.Node
		want         string
	}{
		{"1.36 with containerd 2.2", "v1.36.0", node("v1.36.0", "containerd://2.2.0"), nodejob.ImageVolume},
		{"1.35 with containerd 2.1", "v1.35.2", node("v1.35.2", "containerd://v2.1.4"), nodejob.ImageVolume},
		{"containerd built from source", "v1.36.0", node("v1.36.0", "containerd://2.2.0+unknown"), nodejob.ImageVolume},
		{"containerd 2.0", "v1.36.0", node("v1.36.0", "containerd://2.0.5"), nodejob.ImageCopy},
		{"containerd 1.7", "v1.36.0", node("v1.36.0", "containerd://1.7.27"), nodejob.ImageCopy},
		{"an older kubelet", "v1.36.0", node("v1.34.1", "containerd://2.2.0"), nodejob.ImageCopy},
		{"an older API server", "v1.34.0", node("v1.36.0", "containerd://2.2.0"), nodejob.ImageCopy},
		{"an API server of unknown version", "", node("v1.36.0", "containerd://2.2.0"), nodejob.ImageCopy},
		{"another runtime", "v1.36.0", node("v1.36.0", "cri-o://1.34.0"), nodejob.ImageCopy},
		{"a managed cluster's versions", "v1.35.1-eks-3025e55", node("v1.35.0-eks-5e0fdde", "containerd://2.1.3"), nodejob.ImageVolume},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ImageWay(tc.server, tc.node); got != tc.want {
				t.Errorf("ImageWay(%s, %+v) = %s, want %s", tc.server, tc.node.Status.NodeInfo, got, tc.want)
			}
		})
	}
}
