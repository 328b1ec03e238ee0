package operator_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
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
	f := nodelabel.FailureOf(node, "dur", getShim(t, env.Client, "dur").UID)
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
	if f := nodelabel.FailureOf(node, "dur", getShim(t, env.Client, "dur").UID); f != nil {
		t.Errorf("the failure stayed on the node: %+v", f)
	}
	if got := getShim(t, env.Client, "dur").Status.Retried; got != bad+"@1" {
		t.Errorf("status.retried = %q", got)
	}
}

// TestCanaryChangeRetriesCanaryFailures: a node whose canary failed halts
// the rollout; changing spec.canary (here its timeout) tries that node
// again with the new canary, and lets the rollout go on, without
// reinstalling the node already installed (the canary is not part of the
// spec hash). A failure that is not the canary's is not retried by it.
func TestCanaryChangeRetriesCanaryFailures(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	createNodes(t, env.Client, 3, map[string]string{"can": "true"}, "can")
	// The second node to run fails its canary while the canary is the
	// first one.
	var mu sync.Mutex
	runs := map[string]int{}
	var firstCanary, bad, good string
	startPodKubelet(t, env, 50*time.Millisecond, func(_ context.Context, j *batchv1.Job) testutil.PodRun {
		node := j.Spec.Template.Spec.NodeName
		mu.Lock()
		defer mu.Unlock()
		runs[node]++
		switch {
		case firstCanary == "":
			firstCanary, good = j.Annotations["shim.containerd.x-k8s.io/canary"], node
		case bad == "":
			bad = node
		}
		if node == bad && j.Annotations["shim.containerd.x-k8s.io/canary"] == firstCanary {
			return testutil.ResultRun(t, plan.ExitRolledBack, failedResult(node, plan.RolledBack, plan.ReasonCanaryFailed, "the canary pod did not succeed in time"))
		}
		return testutil.PodRun{}
	})
	startOperator(t, env)
	if err := env.Client.Create(ctx, newShim("can", "can", "1", map[string]string{"can": "true"})); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "halted on the second node", func() (bool, string) {
		s := getShim(t, env.Client, "can")
		return len(s.Status.FailingNodes) == 1 && s.Status.FailingNodes[0].Reason == string(plan.ReasonCanaryFailed), fmt.Sprintf("%+v", s.Status)
	})
	if c := condition(getShim(t, env.Client, "can"), v1alpha1.ConditionStalled); c == nil || !strings.Contains(c.Message, "spec.canary") {
		t.Errorf("Stalled does not say what retries the node: %+v", c)
	}
	time.Sleep(3 * time.Second) // the halt holds
	mu.Lock()
	before := maps.Clone(runs)
	mu.Unlock()
	if f := getShim(t, env.Client, "can").Status.FailingNodes[0].Node; f != bad || len(before) != 2 {
		t.Fatalf("failed on %s, installer runs %v: want the second node (%s) failed and the third not started", f, before, bad)
	}

	// The admin gives the canary more time.
	s := getShim(t, env.Client, "can")
	hash := s.Status.SpecHash
	patch := client.MergeFrom(s.DeepCopy())
	s.Spec.Canary = &v1alpha1.Canary{Timeout: &metav1.Duration{Duration: 90 * time.Second}}
	if err := env.Client.Patch(ctx, s, patch); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "Ready after the canary changed", ready(env.Client, "can"))
	mu.Lock()
	defer mu.Unlock()
	third := ""
	for n := range runs {
		if n != good && n != bad {
			third = n
		}
	}
	if len(runs) != 3 || runs[good] != 1 || runs[bad] != 2 || runs[third] != 1 {
		t.Errorf("installer runs by node %v, want %s once (not reinstalled), %s twice, the third once", runs, good, bad)
	}
	if got := getShim(t, env.Client, "can").Status.SpecHash; got != hash {
		t.Errorf("the canary changed the spec hash: %s → %s", hash, got)
	}
	if f := nodelabel.FailureOf(getNode(t, env.Client, bad), "can", s.UID); f != nil {
		t.Errorf("the failure stayed on %s: %+v", bad, f)
	}
}

// TestRetryOneOfTwoFailedNodes: two nodes fail at once (maxUpdate 2) and
// halt the rollout; a retry of one of them installs it at once, while
// the other's failure still halts every other node.
func TestRetryOneOfTwoFailedNodes(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	createNodes(t, env.Client, 4, map[string]string{"two": "true"}, "two")
	var mu sync.Mutex
	bad := map[string]bool{}
	startKubelet(t, env, 50*time.Millisecond, func(j *batchv1.Job) bool {
		mu.Lock()
		defer mu.Unlock()
		node := j.Spec.Template.Spec.NodeName
		if len(bad) < 2 && !bad[node] {
			bad[node] = true
		}
		return bad[node]
	})
	startOperator(t, env)
	if err := env.Client.Create(ctx, newShim("two", "two", "2", map[string]string{"two": "true"})); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "halted on two nodes", func() (bool, string) {
		s := getShim(t, env.Client, "two")
		return len(s.Status.FailingNodes) == 2, fmt.Sprintf("%+v", s.Status.FailingNodes)
	})
	failed := getShim(t, env.Client, "two").Status.FailingNodes
	fixed, other := failed[0].Node, failed[1].Node
	mu.Lock()
	bad[fixed] = false
	mu.Unlock()
	s := getShim(t, env.Client, "two")
	patch := client.MergeFrom(s.DeepCopy())
	s.Annotations = map[string]string{v1alpha1.RetryAnnotation: fixed + "@1"}
	if err := env.Client.Patch(ctx, s, patch); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, fixed+" installed by the retry", func() (bool, string) {
		n := &corev1.Node{}
		_ = env.Client.Get(ctx, client.ObjectKey{Name: fixed}, n)
		ok, _ := nodelabel.State(n, "two")
		return ok, fmt.Sprint(n.Labels)
	})
	time.Sleep(3 * time.Second) // two resync periods: the halt holds
	s = getShim(t, env.Client, "two")
	if len(s.Status.FailingNodes) != 1 || s.Status.FailingNodes[0].Node != other {
		t.Errorf("failing after the retry of %s: %+v, want %s alone", fixed, s.Status.FailingNodes, other)
	}
	for _, j := range jobsOf(t, env.Client, "two") {
		if n := j.Spec.Template.Spec.NodeName; n != fixed && n != other {
			t.Errorf("Job %s on %s: the halt of %s let another node start", j.Name, n, other)
		}
	}
}
