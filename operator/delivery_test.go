package operator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestProgressiveDelivery drives one Shim through every progressive-
// delivery rule on a real API server, with the operator's clock injected:
// a staged first rollout that bakes after its first node; a pause that
// starts nothing (kstatus InProgress, not Failed); the next spec's first
// step, whose workloads then fail in the runtime's way on the updated
// node: the health gate halts the rollout (WorkloadFailures, naming the
// pod and node; kstatus Failed) with the other nodes untouched; with
// onFailure: Revert the node goes back to the previous revision
// (Reverted); the metrics of the step, the pause and the gate's trip
// along the way; and a closed maintenance window that holds a new spec until
// the clock reaches it.
func TestProgressiveDelivery(t *testing.T) {
	env := startCluster(t)
	kubectl := kubectlFor(t, env)
	ctx := context.Background()
	createNodes(t, env.Client, 4, nil, "n")
	startKubelet(t, env, 200*time.Millisecond, func(*batchv1.Job) bool { return false })
	// The operator's clock starts three hours back, so that the rollouts it
	// starts begin before the workload pods the test creates (the gate
	// counts failures since the rollout started); it reaches now by the
	// end, before the window.
	t0 := time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Hour)
	clk := clocktesting.NewFakeClock(t0)
	startOperatorWith(t, env, env.Config, func(o *operator.Options) { o.Clock, o.GatePeriod = clk, 300*time.Millisecond })

	shim := newShim("wasm", "wasm", "2", nil)
	shim.Spec.RolloutStrategy.Steps = []v1alpha1.RolloutStep{
		{Nodes: intstr.FromInt32(1), Bake: &metav1.Duration{Duration: time.Hour}},
		{Nodes: intstr.FromString("100%")},
	}
	if err := env.Client.Create(ctx, shim); err != nil {
		t.Fatal(err)
	}
	// The first step: one node, then its bake.
	stage(t, env.Client, kubectl, "wasm", "first step bakes", status.InProgressStatus, "")
	waitReason(t, env, "wasm", v1alpha1.ConditionReconciling, v1alpha1.ReasonBaking)
	s := getShim(t, env.Client, "wasm")
	if n := len(nodesWith(t, env.Client, "wasm")); n != 1 || s.Status.Rollout == nil || s.Status.Rollout.BakeUntil == nil ||
		!s.Status.Rollout.BakeUntil.Time.Equal(clk.Now().Add(time.Hour)) || s.Status.Rollout.Steps != 2 {
		t.Fatalf("baking: %d nodes installed, rollout %+v", n, s.Status.Rollout)
	}
	if step := gauge(t, "shimkit_rollout_step", map[string]string{"shim": "wasm"}); step != 0 {
		t.Errorf("shimkit_rollout_step = %v during the first step, want 0", step)
	}
	clk.Step(time.Hour)
	stage(t, env.Client, kubectl, "wasm", "rolled out after the bake", status.CurrentStatus, "")
	v1 := getShim(t, env.Client, "wasm").Status
	if len(v1.Revisions) != 1 || v1.Revisions[0].SpecHash != v1.SpecHash || v1.Revisions[0].ControllerRevision == "" {
		t.Fatalf("revisions after the first rollout: %+v", v1.Revisions)
	}

	// Paused: a new spec starts nothing, and the Shim is not stalled.
	updateShim(t, env.Client, "wasm", func(s *v1alpha1.Shim) {
		s.Spec.RolloutStrategy.Paused = true
		s.Spec.FetchStrategy.AnonHTTP.Location = "https://artifacts.invalid/wasm-v2.tar.gz"
	})
	waitReason(t, env, "wasm", v1alpha1.ConditionReady, v1alpha1.ReasonPaused)
	stage(t, env.Client, kubectl, "wasm", "paused", status.InProgressStatus, "")
	if p := gauge(t, "shimkit_rollout_paused", map[string]string{"shim": "wasm"}); p != 1 {
		t.Errorf("shimkit_rollout_paused = %v while paused, want 1", p)
	}
	time.Sleep(time.Second)
	assertAt(t, env, "wasm", v1.SpecHash, 4)

	// Unpaused: the first step's node, then a workload of the RuntimeClass
	// that the runtime cannot start there trips the gate during the bake.
	updateShim(t, env.Client, "wasm", func(s *v1alpha1.Shim) { s.Spec.RolloutStrategy.Paused = false })
	waitReason(t, env, "wasm", v1alpha1.ConditionReconciling, v1alpha1.ReasonBaking)
	v2 := getShim(t, env.Client, "wasm").Status.SpecHash
	var updated string
	for n, h := range nodesWith(t, env.Client, "wasm") {
		if h == v2 {
			updated = n
		}
	}
	failingPod(t, env, "web-1", updated, "wasm-rc")
	appCrash(t, env, "batch-1", updated, "wasm-rc")
	stage(t, env.Client, kubectl, "wasm", "workloads fail", status.FailedStatus, v1alpha1.ReasonWorkloadFailures)
	s = getShim(t, env.Client, "wasm")
	deg := condition(s, v1alpha1.ConditionDegraded)
	if deg.Reason != v1alpha1.ReasonWorkloadFailures || !contains(deg.Message, "default/web-1", updated) || contains(deg.Message, "batch-1") {
		t.Errorf("Degraded %+v: want WorkloadFailures naming web-1 and %s, not the application's crash", deg, updated)
	}
	if m := metric(t, "shimkit_workload_gate_trips_total", map[string]string{"shim": "wasm", "reason": v1alpha1.ReasonWorkloadFailures}); m == nil || m.GetCounter().GetValue() != 1 {
		t.Errorf("shimkit_workload_gate_trips_total{reason=WorkloadFailures} = %v, want 1", m)
	}
	clk.Step(2 * time.Hour) // the bake is over; the halt stands
	time.Sleep(time.Second)
	assertAt(t, env, "wasm", v1.SpecHash, 3)

	// onFailure: Revert: the node goes back to the previous revision.
	updateShim(t, env.Client, "wasm", func(s *v1alpha1.Shim) { s.Spec.RolloutStrategy.OnFailure = v1alpha1.FailureRevert })
	waitReason(t, env, "wasm", v1alpha1.ConditionReady, v1alpha1.ReasonReverted)
	stage(t, env.Client, kubectl, "wasm", "reverted", status.FailedStatus, v1alpha1.ReasonReverted)
	assertAt(t, env, "wasm", v1.SpecHash, 4)
	if s := getShim(t, env.Client, "wasm"); s.Status.SpecHash != v1.SpecHash || s.Status.Rollout.SpecHash != v2 || s.Status.Rollout.RevertedTo != v1.SpecHash {
		t.Errorf("reverted: specHash %s, rollout %+v; want %s from %s", s.Status.SpecHash, s.Status.Rollout, v1.SpecHash, v2)
	}
	// Every condition of the revert says why: the gate tripped, on which
	// pod and node (no node failed), and how many nodes have v1 (all 4).
	s = getShim(t, env.Client, "wasm")
	for _, c := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionDegraded, v1alpha1.ConditionStalled} {
		m := condition(s, c).Message
		if !contains(m, "the health gate tripped", "default/web-1", updated, "4 of 4 nodes have the previous revision") || contains(m, "a node failed") {
			t.Errorf("%s says %q: want the gate's trip on web-1 and %s, and 4 of 4 nodes on the previous revision", c, m, updated)
		}
	}

	// A daily window that opens two hours on: a new spec waits for it.
	if err := env.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default"}}); err != nil {
		t.Fatal(err)
	}
	open := t0.Add(5 * time.Hour)
	updateShim(t, env.Client, "wasm", func(s *v1alpha1.Shim) {
		s.Spec.RolloutStrategy.Steps = nil
		s.Spec.RolloutStrategy.Windows = []v1alpha1.MaintenanceWindow{{Start: open.Format("15:04"), End: open.Add(time.Hour).Format("15:04"), TimeZone: "UTC"}}
		s.Spec.FetchStrategy.AnonHTTP.Location = "https://artifacts.invalid/wasm-v3.tar.gz"
	})
	waitReason(t, env, "wasm", v1alpha1.ConditionReady, v1alpha1.ReasonWaitingForWindow)
	stage(t, env.Client, kubectl, "wasm", "waiting for the window", status.InProgressStatus, "")
	s = getShim(t, env.Client, "wasm")
	if s.Status.Rollout.NextWindow == nil || !s.Status.Rollout.NextWindow.Time.Equal(open) {
		t.Errorf("nextWindow %v, want %s", s.Status.Rollout.NextWindow, open)
	}
	assertAt(t, env, "wasm", v1.SpecHash, 4)
	clk.SetTime(open)
	stage(t, env.Client, kubectl, "wasm", "rolled out in the window", status.CurrentStatus, "")
	if s := getShim(t, env.Client, "wasm"); len(s.Status.Revisions) != 2 || s.Status.Revisions[1].SpecHash != v1.SpecHash {
		t.Errorf("revisions %+v: want the new one, then %s", s.Status.Revisions, v1.SpecHash)
	}
}

// waitReason waits for the Shim's condition to have reason, at its
// generation.
func waitReason(t *testing.T, env *testutil.Env, name, cond, reason string) {
	t.Helper()
	waitFor(t, 30*time.Second, name+": "+cond+" "+reason, func() (bool, string) {
		s := getShim(t, env.Client, name)
		c := condition(s, cond)
		return c != nil && c.Reason == reason && c.ObservedGeneration == s.Generation, fmt.Sprintf("%+v", s.Status.Conditions)
	})
}

// assertAt checks that n nodes have the Shim at hash and that no Job is
// running towards another.
func assertAt(t *testing.T, env *testutil.Env, name, hash string, n int) {
	t.Helper()
	waitFor(t, 30*time.Second, fmt.Sprintf("%d nodes at %s", n, hash), func() (bool, string) {
		got := 0
		for _, h := range nodesWith(t, env.Client, name) {
			if h == hash {
				got++
			}
		}
		return got == n, fmt.Sprint(nodesWith(t, env.Client, name))
	})
}

// failingPod creates a pod of the RuntimeClass on the node whose container
// the runtime could not create, as the kubelet reports it.
func failingPod(t *testing.T, env *testutil.Env, name, node, class string) {
	t.Helper()
	workloadPod(t, env, name, node, class, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
		Reason: "CreateContainerError", Message: "failed to create containerd task: failed to start shim: exit status 1",
	}})
}

// appCrash creates a pod of the RuntimeClass on the node whose container
// ran and exited 1: the application's failure, not the runtime's.
func appCrash(t *testing.T, env *testutil.Env, name, node, class string) {
	t.Helper()
	workloadPod(t, env, name, node, class, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", StartedAt: metav1.Now(), FinishedAt: metav1.Now()}})
}

func workloadPod(t *testing.T, env *testutil.Env, name, node, class string, state corev1.ContainerState, last ...corev1.ContainerState) {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: node, RuntimeClassName: ptr.To(class),
			Containers: []corev1.Container{{Name: "app", Image: "app:v1"}}},
	}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	cs := corev1.ContainerStatus{Name: "app", Image: "app:v1", State: state}
	if len(last) > 0 {
		cs.LastTerminationState, cs.RestartCount = last[0], 3
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{cs}}
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
