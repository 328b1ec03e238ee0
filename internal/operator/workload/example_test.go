package workload_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shimkit/shimkit/internal/operator/workload"
)

// The cache keeps of a workload pod only what the health gate and a drain
// read: its labels, not its containers.
func ExampleTrimPod() {
	trim := workload.TrimPod("shimkit-system")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "n1", RuntimeClassName: ptr.To("wasmtime-spin"),
			Containers: []corev1.Container{{Name: "web", Image: "web:1"}}},
	}
	out, _ := trim(pod)
	p := out.(*corev1.Pod)
	fmt.Println(p.Name, p.Spec.NodeName, *p.Spec.RuntimeClassName, len(p.Labels), len(p.Spec.Containers))
	// Output: web-1 n1 wasmtime-spin 1 0
}
