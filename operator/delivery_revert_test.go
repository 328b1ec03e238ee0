package operator_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestRevertOnNodeFailure: a Shim created with onFailure: Revert (not set
// after a halt) whose next spec fails on the nodes of its second wave: the
// nodes its first wave updated go back to the previous revision, under
// the same maxUpdate, and the Shim ends Reverted (kstatus Failed) until
// the spec changes.
func TestRevertOnNodeFailure(t *testing.T) {
	env := startCluster(t)
	kubectl := kubectlFor(t, env)
	createNodes(t, env.Client, 4, nil, "r")
	var mu sync.Mutex
	var v1 string
	var v2Nodes []string // the nodes of v2's install Jobs, in the order they started
	k := startKubelet(t, env, 300*time.Millisecond, func(j *batchv1.Job) bool {
		mu.Lock()
		defer mu.Unlock()
		if v1 == "" || j.Labels[jobview.LabelOp] != jobview.OpInstall || j.Labels[jobview.LabelSpecHash] == v1 {
			return false
		}
		node := jobview.NodeOf(j)
		if !slices.Contains(v2Nodes, node) {
			v2Nodes = append(v2Nodes, node)
		}
		return slices.Index(v2Nodes, node) >= 2 // the second wave fails
	})
	startOperator(t, env)

	shim := newShim("rv", "rv", "2", nil)
	shim.Spec.RolloutStrategy.OnFailure = v1alpha1.FailureRevert
	if err := env.Client.Create(context.Background(), shim); err != nil {
		t.Fatal(err)
	}
	stage(t, env.Client, kubectl, "rv", "v1 rolled out", status.CurrentStatus, "")
	mu.Lock()
	v1 = getShim(t, env.Client, "rv").Status.SpecHash
	mu.Unlock()

	changed := time.Now()
	updateShim(t, env.Client, "rv", func(s *v1alpha1.Shim) {
		s.Spec.FetchStrategy.AnonHTTP.Location = "https://artifacts.invalid/rv-v2.tar.gz"
	})
	waitReason(t, env, "rv", v1alpha1.ConditionReady, v1alpha1.ReasonReverted)
	stage(t, env.Client, kubectl, "rv", "reverted after a node failed", status.FailedStatus, v1alpha1.ReasonReverted)
	assertAt(t, env, "rv", v1, 4)
	s := getShim(t, env.Client, "rv")
	if s.Status.Rollout == nil || s.Status.Rollout.RevertedTo != v1 || s.Status.SpecHash != v1 {
		t.Errorf("reverted: specHash %s, rollout %+v; want reverted to %s", s.Status.SpecHash, s.Status.Rollout, v1)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(v2Nodes) != 4 {
		t.Fatalf("v2 started on %v: want its first wave (2 nodes), then the second (2), which fails", v2Nodes)
	}
	if n := k.maxRunning("rv"); n > 2 {
		t.Errorf("%d installer Jobs of the Shim ran at once (the revert's included); maxUpdate is 2", n)
	}
	// The revert reinstalled v1 on the first wave's nodes (a v1 Job made
	// after the change); the second wave's nodes, which the installer
	// left as they were, got none.
	jobs := &batchv1.JobList{}
	if err := env.Client.List(context.Background(), jobs, client.InNamespace(jobNamespace),
		client.MatchingLabels{jobview.LabelOp: jobview.OpInstall, jobview.LabelSpecHash: v1}); err != nil {
		t.Fatal(err)
	}
	reverted := map[string]bool{}
	for i := range jobs.Items {
		created, err := time.Parse(time.RFC3339Nano, jobs.Items[i].Annotations[jobview.AnnotationCreated])
		if err != nil {
			t.Fatal(err)
		}
		if created.After(changed) {
			reverted[jobview.NodeOf(&jobs.Items[i])] = true
		}
	}
	for i, n := range v2Nodes {
		if want := i < 2; reverted[n] != want {
			t.Errorf("node %s (v2's %d.): reverted %v, want %v", n, i+1, reverted[n], want)
		}
	}
}

// TestWindowExemptions: outside the maintenance window a node that runs
// workloads waits, while a node that joined with the startup taint
// (nothing runs there yet) and a node an admin forces are installed at
// once; the rest follow when the window opens.
func TestWindowExemptions(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	createNodes(t, env.Client, 3, nil, "w")
	tainted := &corev1.Node{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "w-0001"}, tainted); err != nil {
		t.Fatal(err)
	}
	tainted.Spec.Taints = append(tainted.Spec.Taints, corev1.Taint{Key: operator.PendingTaint, Effect: corev1.TaintEffectNoSchedule})
	if err := env.Client.Update(ctx, tainted); err != nil {
		t.Fatal(err)
	}
	forced := &corev1.Node{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "w-0002"}, forced); err != nil {
		t.Fatal(err)
	}
	forced.Annotations = map[string]string{operator.ForceRolloutAnnotation: "true"}
	if err := env.Client.Update(ctx, forced); err != nil {
		t.Fatal(err)
	}
	startKubelet(t, env, 200*time.Millisecond, func(*batchv1.Job) bool { return false })
	t0 := time.Now().UTC().Truncate(time.Hour)
	clk := clocktesting.NewFakeClock(t0)
	startOperatorWith(t, env, env.Config, func(o *operator.Options) { o.Clock = clk })

	open := t0.Add(3 * time.Hour)
	shim := newShim("win", "win", "100%", nil)
	shim.Spec.RolloutStrategy.Windows = []v1alpha1.MaintenanceWindow{{Start: open.Format("15:04"), End: open.Add(time.Hour).Format("15:04"), TimeZone: "UTC"}}
	if err := env.Client.Create(ctx, shim); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the tainted and the forced node installed outside the window", func() (bool, string) {
		got := nodesWith(t, env.Client, "win")
		_, a := got["w-0001"]
		_, b := got["w-0002"]
		return a && b, "installed: " + mapKeys(got)
	})
	waitReason(t, env, "win", v1alpha1.ConditionReady, v1alpha1.ReasonWaitingForWindow)
	time.Sleep(time.Second)
	if got := nodesWith(t, env.Client, "win"); len(got) != 2 {
		t.Fatalf("outside the window: installed on %s; want only w-0001 (startup taint) and w-0002 (forced)", mapKeys(got))
	}
	clk.SetTime(open)
	waitFor(t, 30*time.Second, "the last node installed in the window", func() (bool, string) {
		got := nodesWith(t, env.Client, "win")
		return len(got) == 3, "installed: " + mapKeys(got)
	})
}

// mapKeys lists the map's keys, sorted.
func mapKeys(m map[string]string) string {
	return fmt.Sprint(slices.Sorted(maps.Keys(m)))
}
