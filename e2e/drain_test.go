package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/nodelabel/record"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

const drainLabel = "shimkit.test/drain"

// plainPod is a busybox pod (no RuntimeClass) bound to the node.
func plainPod(name string, node testutil.ClusterNode) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			NodeName:                      node.Name,
			TerminationGracePeriodSeconds: ptr.To(int64(1)),
			Containers: []corev1.Container{{Name: "sh", Image: testutil.BusyboxImageRef, ImagePullPolicy: corev1.PullNever,
				Command: []string{"/bin/busybox", "sleep", "3600"}}},
		},
	}
}

// testDrain: rolloutStrategy.disruption Drain around a config change
// (an install restarts containerd), on two nodes of its own.
//   - a: a PodDisruptionBudget keeps its pod; the Shim cordons a, the
//     drain is refused until its timeout, a fails with DrainBlocked
//     quoting the budget, containerd there is not restarted, a is
//     uncordoned, the Shim Degraded, and no node is cordoned again
//     before a retry;
//   - a retried (its timeout raised): cordoned again; the operator,
//     killed mid-drain, resumes with the same cordon; its kubelet,
//     restarted mid-drain, kills no pod; once the budget
//     allows it, a's pod is evicted, containerd restarted, a uncordoned;
//   - b, cordoned by an admin beforehand: drained, installed, and still
//     cordoned after (shimkit lifts only its own cordons).
func testDrain(t *testing.T, c *testutil.Cluster, a, b testutil.ClusterNode, build testutil.ContainerdBuild) {
	ctx := context.Background()
	for _, n := range []testutil.ClusterNode{a, b} {
		testutil.ImportBusybox(t, "/usr/bin/ctr", n.Socket())
	}
	kubectl(t, c, "label", "node", a.Name, drainLabel+"=yes")
	kubectl(t, c, "cordon", b.Name)
	t.Cleanup(func() { kubectl(t, c, "uncordon", b.Name) })
	for name, n := range map[string]testutil.ClusterNode{"web-a": a, "web-b": b} {
		if err := c.Client.Create(ctx, plainPod(name, n)); err != nil {
			t.Fatal(err)
		}
		c.WaitPodRunning(t, "default", name)
	}
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-a"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web-a"}}}}
	if err := c.Client.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Client.Delete(context.Background(), pdb) })
	waitFor(t, 30*time.Second, "the budget observed", func() bool {
		return c.Client.Get(ctx, client.ObjectKeyFromObject(pdb), pdb) == nil && pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.CurrentHealthy == 1
	})

	srv := c.StartFileServer(t)
	art := testutil.NewShimArchive(t, "drained", build.Binary("containerd-shim-runc-v2"), nil)
	one32 := intstr.FromInt32(1)
	shim := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "drained"}, Spec: v1alpha1.ShimSpec{
		NodeSelector:  map[string]string{drainLabel: "yes"},
		FetchStrategy: v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{Location: srv.Add("/drained.tar.gz", art.Data), SHA256: art.SHA256}},
		RuntimeClass:  v1alpha1.RuntimeClassSpec{Name: "drained", Handler: "drained"},
		RolloutStrategy: &v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutRolling, Rolling: &v1alpha1.RollingUpdate{MaxUpdate: &one32},
			Disruption: &v1alpha1.Disruption{Policy: v1alpha1.DisruptDrain, Timeout: &metav1.Duration{Duration: 10 * time.Second}}},
	}}
	before := restartWindows(t, []testutil.ClusterNode{a})
	start := time.Now()
	if err := c.Client.Create(ctx, shim); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteShim(t, c, "drained") })
	disrupted := func(n testutil.ClusterNode) (record.Disrupted, bool, bool) {
		node := &corev1.Node{}
		if err := c.Client.Get(ctx, client.ObjectKey{Name: n.Name}, node); err != nil {
			t.Fatal(err)
		}
		d, ok := record.DisruptedBy(node, "drained")
		return d, ok, node.Spec.Unschedulable
	}
	waitFor(t, 30*time.Second, a.Name+" cordoned for drained", func() bool {
		d, ok, cordoned := disrupted(a)
		return ok && d.Cordoned && cordoned
	})
	t.Logf("%s cordoned %v after the Shim was created", a.Name, time.Since(start).Round(100*time.Millisecond))

	// The budget holds past the timeout: DrainBlocked, a not restarted,
	// uncordoned.
	var failure v1alpha1.NodeFailure
	waitFor(t, 90*time.Second, "DrainBlocked", func() bool {
		s := getShimStatus(t, c, "drained")
		if len(s.FailingNodes) == 0 {
			return false
		}
		failure = s.FailingNodes[0]
		return failure.Reason == v1alpha1.ReasonDrainBlocked
	})
	t.Logf("blocked: %s", failure.Message)
	if failure.Node != a.Name || !strings.Contains(failure.Message, "PodDisruptionBudget default/web-a") {
		t.Errorf("failure %+v: want %s, naming PodDisruptionBudget default/web-a", failure, a.Name)
	}
	waitFor(t, 30*time.Second, a.Name+" released", func() bool {
		_, ok, cordoned := disrupted(a)
		return !ok && !cordoned
	})
	if now := restartWindows(t, []testutil.ClusterNode{a}); now[0] != before[0] {
		t.Errorf("%s: containerd restarted though its drain failed", a.Name)
	}
	c.WaitPodRunning(t, "default", "web-a")
	// Failed like any node: Degraded, and the rollout holds until a
	// retry: no node is cordoned again meanwhile.
	waitFor(t, 30*time.Second, "drained Degraded, NodeFailed", func() bool {
		st := getShimStatus(t, c, "drained")
		return meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionDegraded) && conditionReason(st, v1alpha1.ConditionDegraded) == v1alpha1.ReasonNodeFailed
	})
	time.Sleep(6 * time.Second) // three of the operator's resyncs
	if _, ok, cordoned := disrupted(a); ok || cordoned {
		t.Errorf("%s cordoned again before a retry (record %v, unschedulable %v)", a.Name, ok, cordoned)
	}

	// Retried, with a timeout that outlasts an operator's restart:
	// cordoned again; the operator killed mid-drain resumes with the same
	// cordon.
	kubectl(t, c, "patch", "shim", "drained", "--type=merge", "-p", `{"spec":{"rolloutStrategy":{"disruption":{"timeout":"5m"}}}}`)
	kubectl(t, c, "annotate", "shim", "drained", "--overwrite", v1alpha1.RetryAnnotation+"=all@drain")
	var first record.Disrupted
	waitFor(t, 30*time.Second, a.Name+" cordoned again", func() bool {
		d, ok, cordoned := disrupted(a)
		first = d
		return ok && d.Cordoned && cordoned
	})
	old := operatorPod(t, c, "shimkit-system")
	if err := c.Client.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "a new operator pod", func() bool {
		p := operatorPod(t, c, "shimkit-system")
		return p.UID != old.UID
	})
	time.Sleep(6 * time.Second) // the new operator's reconciles of the drain
	if d, ok, cordoned := disrupted(a); !ok || !d.Since.Equal(first.Since) || !d.Cordoned || !cordoned {
		t.Errorf("%s after the operator's restart: %+v %v unschedulable %v; want the cordon of %s kept", a.Name, d, ok, cordoned, first.Since)
	}
	// The kubelet restarted mid-drain kills no pod: web-a runs on in its
	// container.
	kubeletRestartKillsNone(t, c, a, map[string]string{"web-a": containerOf(t, c, "web-a")})
	patch := client.MergeFrom(pdb.DeepCopy())
	zero := intstr.FromInt32(0)
	pdb.Spec.MinAvailable = &zero
	if err := c.Client.Patch(ctx, pdb, patch); err != nil {
		t.Fatal(err)
	}
	kubectl(t, c, "wait", "--for=condition=Ready", "shim/drained", "--timeout=120s")
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web-a"}, &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("web-a after the drain: %v, want evicted", err)
	}
	if now := restartWindows(t, []testutil.ClusterNode{a}); now[0] == before[0] {
		t.Errorf("%s: containerd not restarted by the install", a.Name)
	}
	if _, ok, cordoned := disrupted(a); ok || cordoned {
		t.Errorf("%s after its install: record %v, unschedulable %v; want released", a.Name, ok, cordoned)
	}

	// b, cordoned by an admin: drained and installed, and cordoned still.
	kubectl(t, c, "label", "node", b.Name, drainLabel+"=yes")
	waitFor(t, 120*time.Second, "drained on both nodes", func() bool {
		s := getShimStatus(t, c, "drained")
		return s.UpdatedNodes == 2 && conditionReason(s, v1alpha1.ConditionReady) == v1alpha1.ReasonRolledOut
	})
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web-b"}, &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("web-b after the drain: %v, want evicted", err)
	}
	waitFor(t, 30*time.Second, b.Name+"'s record gone", func() bool { _, ok, _ := disrupted(b); return !ok })
	if _, _, cordoned := disrupted(b); !cordoned {
		t.Errorf("%s: the admin's cordon was lifted", b.Name)
	}
}

// deleteShim deletes a Shim and waits until it is gone.
func deleteShim(t *testing.T, c *testutil.Cluster, name string) {
	t.Helper()
	ctx := context.Background()
	if err := c.Client.Delete(ctx, &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: name}}); client.IgnoreNotFound(err) != nil {
		t.Error(err)
	}
	waitFor(t, 180*time.Second, name+" gone", func() bool {
		return apierrors.IsNotFound(c.Client.Get(ctx, client.ObjectKey{Name: name}, &v1alpha1.Shim{}))
	})
}

// containerOf is the ID of the pod's one container (default namespace),
// as kubeletRestartKillsNone compares it.
func containerOf(t *testing.T, c *testutil.Cluster, pod string) string {
	t.Helper()
	p := podOf(t, c, pod)
	if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].ContainerID == "" {
		t.Fatalf("%s: containers %+v, want one running", pod, p.Status.ContainerStatuses)
	}
	return strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")
}
