package nodelabel_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shimkit/shimkit/nodelabel"
)

func ExampleState() {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Labels:      map[string]string{"shim.containerd.x-k8s.io/spin": "installed"},
		Annotations: map[string]string{"shim.containerd.x-k8s.io/spin": "5d41402abc4b2a76"},
	}}
	installed, hash := nodelabel.State(node, "spin")
	fmt.Println(installed, hash, nodelabel.InstalledSelector("spin"))
	// Output: true 5d41402abc4b2a76 shim.containerd.x-k8s.io/spin=installed
}
