package testutil_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shimkit/shimkit/internal/testutil"
)

// TestClusterRunsAPod brings up a two-node cluster, the second node
// k3s-style (containerd and the kubelet in k3s-agent.service) with a
// read-only /opt, and runs a
// pod on each node: a host-network one, and one on the node's pod bridge.
// Restarting k3s-agent restarts both containerd and the kubelet, and the
// pod runs on: its container is the same, and the node Ready again.
func TestClusterRunsAPod(t *testing.T) {
	c := testutil.StartClusterWith(t, testutil.ClusterOptions{Containerd: testutil.ContainerdMatrix(t)[2], Nodes: 1})
	c.AddNode(t, testutil.JoinOptions{K3s: true, ReadOnly: []string{"/opt"}})
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

	k3s := c.Nodes[1]
	// Its /opt is read-only inside the node, as on COS.
	if out, err := k3s.Exec(ctx, "touch", "/opt/probe"); err == nil || !strings.Contains(string(out), "Read-only file system") {
		t.Errorf("/opt is writable on %s: %v %s", k3s.Name, err, out)
	}
	pod := c.WaitPodRunning(t, "default", "pause-"+k3s.Name)
	starts := k3s.ContainerdStarts(t)
	kubelet := func() string {
		out, _ := k3s.Exec(ctx, "pidof", "kubelet")
		return strings.TrimSpace(string(out))
	}
	before := kubelet()
	if out, err := k3s.Exec(ctx, "systemctl", "restart", testutil.K3sUnit); err != nil {
		t.Fatalf("restart %s: %v %s", testutil.K3sUnit, err, out)
	}
	if got := k3s.ContainerdStarts(t); got != starts+1 {
		t.Errorf("%s started %d times, want %d", testutil.K3sUnit, got, starts+1)
	}
	deadline := time.Now().Add(30 * time.Second)
	for now := kubelet(); now == "" || now == before; now = kubelet() {
		if time.Now().After(deadline) {
			t.Fatalf("the kubelet (pid %s) was not restarted with %s (now %q)", before, testutil.K3sUnit, now)
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.WaitNodeReady(t, k3s.Name)
	after := c.WaitPodRunning(t, "default", "pause-"+k3s.Name)
	if after.Status.ContainerStatuses[0].ContainerID != pod.Status.ContainerStatuses[0].ContainerID || after.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("the pod did not run on: %+v, was %+v", after.Status.ContainerStatuses, pod.Status.ContainerStatuses)
	}
}
