package operator_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestDurableFailureAndRetry: a node's failure outlives its Job and the
// operator: with the failed Job garbage collected and the operator
// restarted, the rollout stays halted (no Job is started again, the
// failure stays in the status, read from the node). The documented retry
// annotation resumes it, and the node's record goes once it succeeds.
func TestDurableFailureAndRetry(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	createNodes(t, env.Client, 3, map[string]string{"dur": "true"}, "dur")
	const bad = "dur-0001"
	var failing atomic.Bool
	failing.Store(true)
	startKubelet(t, env, 50*time.Millisecond, func(j *batchv1.Job) bool {
		return failing.Load() && j.Spec.Template.Spec.NodeName == bad
	})
	stop := startOperator(t, env)
	if err := env.Client.Create(ctx, newShim("dur", "dur", "1", map[string]string{"dur": "true"})); err != nil {
		t.Fatal(err)
	}
	halted := func() (bool, string) {
		s := getShim(t, env.Client, "dur")
		c := condition(s, v1alpha1.ConditionDegraded)
		if c == nil || c.Reason != v1alpha1.ReasonNodeFailed || len(s.Status.FailingNodes) != 1 || s.Status.FailingNodes[0].Node != bad {
			return false, "not halted on " + bad
		}
		return true, ""
	}
	waitFor(t, 30*time.Second, "halted", halted)
	node := &corev1.Node{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: bad}, node); err != nil {
		t.Fatal(err)
	}
	f := nodelabel.FailureOf(node, "dur")
	if f == nil || f.Op != "install" || f.Reason == "" || f.SpecHash != getShim(t, env.Client, "dur").Status.SpecHash {
		t.Fatalf("failure on the node: %+v (annotations %v)", f, node.Annotations)
	}

	// The Job is garbage collected and the operator restarts.
	stop()
	for _, j := range jobsOf(t, env.Client, "dur") {
		if err := env.Client.Delete(ctx, &j, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "no Jobs", func() (bool, string) { return len(jobsOf(t, env.Client, "dur")) == 0, "" })
	startOperator(t, env)
	time.Sleep(5 * time.Second) // two resync periods
	if ok, msg := halted(); !ok {
		t.Fatalf("after the Job's GC and a restart: %s", msg)
	}
	for _, j := range jobsOf(t, env.Client, "dur") {
		t.Errorf("Job %s started while halted", j.Name)
	}
	if s := getShim(t, env.Client, "dur"); s.Status.FailingNodes[0].Reason != f.Reason {
		t.Errorf("reason after GC %q, want %q", s.Status.FailingNodes[0].Reason, f.Reason)
	}

	// The admin fixed the node and retries it.
	failing.Store(false)
	s := getShim(t, env.Client, "dur")
	patch := client.MergeFrom(s.DeepCopy())
	s.Annotations = map[string]string{v1alpha1.RetryAnnotation: bad + "@1"}
	if err := env.Client.Patch(ctx, s, patch); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "Ready after the retry", ready(env.Client, "dur"))
	if err := env.Client.Get(ctx, client.ObjectKey{Name: bad}, node); err != nil {
		t.Fatal(err)
	}
	if f := nodelabel.FailureOf(node, "dur"); f != nil {
		t.Errorf("the failure stayed on the node: %+v", f)
	}
	if got := getShim(t, env.Client, "dur").Status.Retried; got != bad+"@1" {
		t.Errorf("status.retried = %q", got)
	}
}
