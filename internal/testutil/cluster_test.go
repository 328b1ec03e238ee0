package testutil_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shimkit/shimkit/internal/testutil"
)

// TestClusterRunsAPod brings up a two-node cluster and runs a pod on each
// node: a host-network one, and one on the node's pod bridge.
func TestClusterRunsAPod(t *testing.T) {
	c := testutil.StartClusterWith(t, testutil.ClusterOptions{Containerd: testutil.ContainerdMatrix(t)[2], Nodes: 2})
	ctx := context.Background()
	if len(c.Nodes) != 2 || c.Nodes[0].IP == c.Nodes[1].IP {
		t.Fatalf("nodes: %+v", c.Nodes)
	}
	for i, n := range c.Nodes {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "pause-" + n.Name, Namespace: "default"},
			Spec: corev1.PodSpec{
				NodeName:                      n.Name,
				HostNetwork:                   i == 0,
				TerminationGracePeriodSeconds: ptr.To(int64(1)),
				Containers:                    []corev1.Container{{Name: "pause", Image: testutil.PauseImageRef, ImagePullPolicy: corev1.PullNever}},
			},
		}
		if err := c.Client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	for i, n := range c.Nodes {
		p := c.WaitPodRunning(t, "default", "pause-"+n.Name)
		if want := i == 0; (p.Status.PodIP == n.IP) != want {
			t.Errorf("pod on %s has IP %s (node %s, host network %v)", n.Name, p.Status.PodIP, n.IP, want)
		}
	}
}
