package health_test

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shimkit/shimkit/internal/operator/health"
)

// Two updated nodes run pods of the Shim's RuntimeClass: on node-a two
// cannot be created by the runtime and one crashes on its own (which does
// not count); on node-b one's sandbox cannot be created. With at most 2
// failing pods per node the gate trips, on node-a.
func ExampleThresholds_Check() {
	bakeStart := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	class := "wasmtime-spin-v2"
	pod := func(node, name string, cs corev1.ContainerStatus) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(bakeStart.Add(time.Minute))},
			Spec:       corev1.PodSpec{NodeName: node, RuntimeClassName: &class},
			Status:     corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{cs}},
		}
	}
	createErr := corev1.ContainerStatus{Name: "app", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
		Reason: "CreateContainerError", Message: "failed to create containerd container: shim not found"}}}
	crashed := corev1.ContainerStatus{Name: "app",
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}}}
	pods := []*corev1.Pod{
		pod("node-a", "web-1", createErr),
		pod("node-a", "web-2", createErr),
		pod("node-a", "api-1", crashed),
		pod("node-b", "web-3", corev1.ContainerStatus{Name: "app"}),
	}
	events := []*corev1.Event{{
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-3", UID: "uid-web-3"},
		Reason:         health.ReasonSandboxFailed, LastTimestamp: metav1.NewTime(bakeStart.Add(2 * time.Minute)),
		Message: `failed to get sandbox runtime: no runtime for "spin" is configured`,
	}}

	fs := health.Failures(pods, events, map[string]bool{class: true}, map[string]bool{"node-a": true, "node-b": true}, bakeStart)
	v := health.Thresholds{PerNode: 2, Total: 5}.Check(fs)
	fmt.Println(v.Tripped, v.Nodes)
	fmt.Println(v.Message)
	// Output:
	// true [node-a]
	// 3 workload pods failing on 2 updated nodes (limit 2 per node, 5 in all): node-a: default/web-1 (CreateContainerError: failed to create containerd container: shim not found), default/web-2 (CreateContainerError: failed to create containerd container: shim not found); node-b: default/web-3 (FailedCreatePodSandBox: failed to get sandbox runtime: no runtime for "spin" is configured)
}
