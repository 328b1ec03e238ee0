package canarypod_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/installer/canarypod"
)

// An installer whose canary runs as a Pod on its node. In a cluster the
// Pods are canarypod.NewRESTPods(rest.InClusterConfig()); here an
// in-memory API server whose "kubelet" lets every pod succeed.
func Example() {
	pods := &canarypod.MemoryPods{Kubelet: func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }}
	inst := &installer.Installer{HostRoot: "/host", Canary: canarypod.New(pods, "node-1")}
	err := inst.Canary.RunCanary(context.Background(), plan.Canary{
		Handler: "runsc", RuntimeClass: "shimkit-canary-gvisor", Namespace: "shimkit-system",
		Image: "shimkit-installer:v1", Args: []string{"canary"}, Timeout: plan.Duration(10 * time.Second),
	})
	fmt.Println(err, pods.Created[0].Spec.NodeName, pods.Len())
	// Output: <nil> node-1 0
}
