package testutil_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shimkit/shimkit/internal/testutil"
)

// TestClusterRunsAPod brings up the single-node cluster and runs a
// host-network pod on its node.
func TestClusterRunsAPod(t *testing.T) {
	c := testutil.StartCluster(t, testutil.ContainerdMatrix(t)[2])
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pause", Namespace: "default"},
		Spec: corev1.PodSpec{
			HostNetwork:                   true,
			TerminationGracePeriodSeconds: ptr.To(int64(1)),
			Containers:                    []corev1.Container{{Name: "pause", Image: testutil.PauseImageRef, ImagePullPolicy: corev1.PullNever}},
		},
	}
	if err := c.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	c.WaitPodRunning(t, "default", "pause")
}
