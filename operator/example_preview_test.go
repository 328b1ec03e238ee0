package operator_test

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// What a new Shim would do on five nodes, two at a time, as kubectl
// shimkit plan shows it: the nodes the operator starts now, then each
// wave, decided as the operator's reconcile decides, writing nothing.
func ExamplePreviewRollout() {
	two := intstr.FromInt32(2)
	shim := &v1alpha1.Shim{
		ObjectMeta: metav1.ObjectMeta{Name: "spin"},
		Spec: v1alpha1.ShimSpec{
			FetchStrategy: v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{
				Location: "https://artifacts.example/spin.tar.gz", SHA256: strings.Repeat("a", 64)}},
			RuntimeClass:    v1alpha1.RuntimeClassSpec{Name: "wasm-spin", Handler: "spin"},
			RolloutStrategy: &v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutRolling, Rolling: &v1alpha1.RollingUpdate{MaxUpdate: &two}},
		},
	}
	var nodes []*corev1.Node
	for _, name := range []string{"n1", "n2", "n3", "n4", "n5"} {
		nodes = append(nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{OperatingSystem: "linux", Architecture: "amd64", ContainerRuntimeVersion: "containerd://2.2.0"}}})
	}
	opts := operator.Options{InstallerImage: "registry.example/shimkit-installer:v0.1.0", Namespace: "shimkit-system"}
	p, err := operator.PreviewRollout(shim, nodes, nil, nil, nil, opts, time.Now())
	if err != nil {
		panic(err)
	}
	fmt.Println("starts now:", len(p.StartNow), "nodes")
	for i, w := range p.Waves {
		fmt.Printf("wave %d installs %d\n", i+1, len(w.Install))
	}
	// Output:
	// starts now: 2 nodes
	// wave 1 installs 2
	// wave 2 installs 2
	// wave 3 installs 1
}
