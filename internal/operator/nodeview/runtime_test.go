package nodeview_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestRuntimeEligibility: a node runs the Shim when its runtime is one of
// the Shim's (spec.containerRuntimes, or its default: containerd, and
// cri-o too for OCI runtimes run through BinaryName); any other is
// skipped, RuntimeNotSupported, with the runtime and how to list it.
func TestRuntimeEligibility(t *testing.T) {
	shimV2 := &v1alpha1.Shim{Spec: v1alpha1.ShimSpec{RuntimeClass: v1alpha1.RuntimeClassSpec{Name: "spin", Handler: "spin"}}}
	oci := &v1alpha1.Shim{Spec: v1alpha1.ShimSpec{RuntimeClass: v1alpha1.RuntimeClassSpec{Name: "crun", Handler: "crun-wasm"},
		RuntimeType: "io.containerd.runc.v2", RuntimeOptions: &runtime.RawExtension{Raw: []byte(`{"BinaryName":"$(BUNDLE_DIR)/crun"}`)}}}
	ociAnnotated := oci.DeepCopy() // containerd's pod annotations: not on CRI-O by default
	ociAnnotated.Spec.PodAnnotations = []string{"run.oci.*"}
	kata := shimV2.DeepCopy()
	kata.Spec.ContainerRuntimes = []string{v1alpha1.RuntimeContainerd, v1alpha1.RuntimeCRIO}
	crioOnly := shimV2.DeepCopy()
	crioOnly.Spec.ContainerRuntimes = []string{v1alpha1.RuntimeCRIO}
	for _, tc := range []struct {
		name    string
		shim    *v1alpha1.Shim
		runtime string // containerRuntimeVersion
		skip    string // a substring of the skip's detail ("": eligible)
	}{
		{"shim v2 on containerd", shimV2, "containerd://2.1.4", ""},
		{"shim v2 on k3s's containerd", shimV2, "containerd://2.0.5-k3s1", ""},
		{"shim v2 on CRI-O, not listed", shimV2, "cri-o://1.34.0", "cri-o://1.34.0; the Shim runs on containerd"},
		{"shim v2 listed for CRI-O", kata, "cri-o://1.34.0", ""},
		{"OCI runtime on CRI-O by default", oci, "cri-o://1.34.0", ""},
		{"OCI runtime on containerd", oci, "containerd://1.7.35", ""},
		{"OCI runtime with containerd's annotations on CRI-O", ociAnnotated, "cri-o://1.34.0", "cri-o://1.34.0; the Shim runs on containerd"},
		{"a CRI-O-only Shim on containerd", crioOnly, "containerd://2.1.4", "containerd://2.1.4; the Shim runs on cri-o"},
		{"docker", oci, "docker://27.0.1", "docker://27.0.1; the Shim runs on containerd, cri-o"},
		{"not reported yet", shimV2, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{
				OperatingSystem: "linux", Architecture: "amd64", ContainerRuntimeVersion: tc.runtime}}}
			skip := nodeview.Eligibility(tc.shim, node, false)
			switch {
			case tc.skip == "" && skip != nil:
				t.Errorf("skipped %+v, want eligible", skip)
			case tc.skip != "" && (skip == nil || skip.Reason != v1alpha1.SkipRuntimeNotSupported || !strings.Contains(skip.Detail, tc.skip)):
				t.Errorf("skip %+v, want RuntimeNotSupported with %q", skip, tc.skip)
			}
		})
	}
}

// TestPreinstalledRuntime: a node whose image has the shim is labelled
// once its kubelet reports the handlers, whatever its runtime.
func TestPreinstalledRuntime(t *testing.T) {
	shim := &v1alpha1.Shim{Spec: v1alpha1.ShimSpec{RuntimeClass: v1alpha1.RuntimeClassSpec{Name: "spin", Handler: "spin"}}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{
		NodeInfo:        corev1.NodeSystemInfo{OperatingSystem: "linux", ContainerRuntimeVersion: "cri-o://1.34.0"},
		RuntimeHandlers: []corev1.NodeRuntimeHandler{{Name: "spin"}}}}
	if skip := nodeview.Eligibility(shim, node, true); skip != nil {
		t.Errorf("a CRI-O node whose image serves the handler skipped: %+v", skip)
	}
}
