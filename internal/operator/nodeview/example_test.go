package nodeview_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// A Shim matches the nodes its selector selects, and installs on those
// that are eligible; the others are skipped with a reason.
func ExampleEligibility() {
	shim := &v1alpha1.Shim{Spec: v1alpha1.ShimSpec{
		NodeSelector:  map[string]string{"pool": "wasm"},
		FetchStrategy: v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{Location: "https://example.invalid/spin.tgz"}},
	}}
	node := func(name, runtime string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": "wasm"}},
			Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{OperatingSystem: "linux", Architecture: "amd64", ContainerRuntimeVersion: runtime}}}
	}
	for _, n := range []*corev1.Node{node("n1", "containerd://2.2.9"), node("n2", "docker://28.0.1")} {
		if skip := nodeview.Eligibility(shim, n, false); skip != nil {
			fmt.Println(n.Name, nodeview.Matches(shim, n), skip.Reason)
			continue
		}
		fmt.Println(n.Name, nodeview.Matches(shim, n), "eligible")
	}
	// Output:
	// n1 true eligible
	// n2 true RuntimeNotSupported
}
