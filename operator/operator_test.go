package operator_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	dto "github.com/prometheus/client_model/go"

	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

func newShim(name, handler, maxUpdate string, selector map[string]string) *v1alpha1.Shim {
	mu := intstr.Parse(maxUpdate)
	return &v1alpha1.Shim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ShimSpec{
			NodeSelector: selector,
			FetchStrategy: v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{
				Location: "https://artifacts.invalid/" + handler + "-v1.tar.gz", SHA256: strings.Repeat("a", 64),
			}},
			RuntimeClass:    v1alpha1.RuntimeClassSpec{Name: handler + "-rc", Handler: handler},
			RolloutStrategy: &v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutRolling, Rolling: &v1alpha1.RollingUpdate{MaxUpdate: &mu}},
		},
	}
}

func nodesWith(t *testing.T, c client.Client, shim string) (installed map[string]string) {
	t.Helper()
	var nodes corev1.NodeList
	if err := c.List(context.Background(), &nodes); err != nil {
		t.Fatal(err)
	}
	installed = map[string]string{}
	for i := range nodes.Items {
		if ok, hash := nodelabel.State(&nodes.Items[i], shim); ok {
			installed[nodes.Items[i].Name] = hash
		}
	}
	return installed
}

func jobsOf(t *testing.T, c client.Client, shim string) []batchv1.Job {
	t.Helper()
	var jobs batchv1.JobList
	if err := c.List(context.Background(), &jobs, client.InNamespace(jobNamespace), client.MatchingLabels{"shim.containerd.x-k8s.io/shim": shim}); err != nil {
		t.Fatal(err)
	}
	return jobs.Items
}

// TestFreshInstall50Nodes: 50 matching nodes with maxUpdate 10% never have
// more than 5 Jobs running, and converge: every node labelled, the
// RuntimeClass published onto labelled nodes only, Ready with counts. The
// control-plane node is left alone.
func TestFreshInstall50Nodes(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	createNodes(t, env.Client, 50, map[string]string{"wasm": "true"}, "worker")
	createNodes(t, env.Client, 1, map[string]string{"wasm": "true", "node-role.kubernetes.io/control-plane": ""}, "cp")
	k := startKubelet(t, env, 150*time.Millisecond, nil)
	startOperator(t, env)
	if err := env.Client.Create(ctx, newShim("spin", "spin", "10%", map[string]string{"wasm": "true"})); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 90*time.Second, "Ready", ready(env.Client, "spin"))

	if m := k.maxRunning("spin"); m > 5 || m == 0 {
		t.Errorf("at most %d Jobs ran at once, want 1..5", m)
	}
	installed := nodesWith(t, env.Client, "spin")
	if len(installed) != 50 {
		t.Errorf("%d nodes labelled, want 50", len(installed))
	}
	if _, ok := installed["cp-0000"]; ok {
		t.Error("the control-plane node got the shim")
	}
	s := getShim(t, env.Client, "spin")
	if s.Status.Nodes != 50 || s.Status.UpdatedNodes != 50 || s.Status.InProgressNodes != 0 || s.Status.FailedNodes != 0 {
		t.Errorf("status counts %+v", s.Status)
	}
	rc := &nodev1.RuntimeClass{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "spin-rc"}, rc); err != nil {
		t.Fatal(err)
	}
	if rc.Handler != "spin" || rc.Scheduling.NodeSelector[nodelabel.Key("spin")] != "installed" {
		t.Errorf("RuntimeClass %+v", rc)
	}
	if n := len(jobsOf(t, env.Client, "spin")); n != 50 {
		t.Errorf("%d Jobs, want one per node (50)", n)
	}
	j := jobsOf(t, env.Client, "spin")[0]
	pod := j.Spec.Template.Spec
	if pod.NodeName == "" || pod.HostPID || !*pod.Containers[0].SecurityContext.Privileged || len(pod.Tolerations) == 0 ||
		*j.Spec.BackoffLimit != 2 || j.Spec.ActiveDeadlineSeconds == nil || j.Spec.TTLSecondsAfterFinished == nil || len(j.Name) > 63 {
		t.Errorf("Job spec: %+v", j.Spec)
	}
	if !metav1.IsControlledBy(&j, s) {
		t.Error("Job not owned by the Shim")
	}

	// Events per node, and metrics.
	var evs eventsv1.EventList
	if err := env.Client.List(ctx, &evs); err != nil {
		t.Fatal(err)
	}
	reasons := map[string]int{}
	for _, e := range evs.Items {
		if e.Regarding.Name == "spin" {
			reasons[e.Reason]++
		}
	}
	if reasons["Installing"] == 0 || reasons["Installed"] == 0 || reasons["RuntimeClassApplied"] == 0 {
		t.Errorf("events by reason: %v", reasons)
	}
	if got := gauge(t, "shimkit_shim_nodes", map[string]string{"shim": "spin", "state": "updated"}); got != 50 {
		t.Errorf("shimkit_shim_nodes{state=updated} = %v, want 50", got)
	}
	if n := histogramCount(t, "shimkit_rollout_duration_seconds", "spin"); n != 1 {
		t.Errorf("rollout duration observed %d times, want 1", n)
	}
}

// metric finds a metric of controller-runtime's registry by name and labels.
func metric(t *testing.T, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
					continue next
				}
			}
			return m
		}
	}
	return nil
}

func gauge(t *testing.T, name string, labels map[string]string) float64 {
	if m := metric(t, name, labels); m != nil {
		return m.GetGauge().GetValue()
	}
	return -1
}

func histogramCount(t *testing.T, name, shim string) uint64 {
	if m := metric(t, name, map[string]string{"shim": shim}); m != nil {
		return m.GetHistogram().GetSampleCount()
	}
	return 0
}

// TestFailureHaltsRollout: a failing node sets Degraded with its name and
// no new node starts.
func TestFailureHaltsRollout(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	createNodes(t, env.Client, 12, nil, "n")
	failing := ""
	var first atomic.Bool
	startKubelet(t, env, 100*time.Millisecond, func(j *batchv1.Job) bool {
		if first.CompareAndSwap(false, true) {
			failing = j.Labels["shim.containerd.x-k8s.io/node"]
		}
		return j.Labels["shim.containerd.x-k8s.io/node"] == failing
	})
	startOperator(t, env)
	if err := env.Client.Create(ctx, newShim("kata", "kata", "2", nil)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "Degraded", func() (bool, string) {
		s := getShim(t, env.Client, "kata")
		c := condition(s, v1alpha1.ConditionDegraded)
		return c != nil && c.Status == metav1.ConditionTrue, fmt.Sprintf("%+v", s.Status.Conditions)
	})
	s := getShim(t, env.Client, "kata")
	if c := condition(s, v1alpha1.ConditionDegraded); !strings.Contains(c.Message, failing) {
		t.Errorf("Degraded does not name %s: %s", failing, c.Message)
	}
	if len(s.Status.FailingNodes) != 1 || s.Status.FailingNodes[0].Node != failing || !strings.Contains(s.Status.FailingNodes[0].Message, "exit code 3") {
		t.Errorf("failingNodes %+v", s.Status.FailingNodes)
	}
	// Let in-flight Jobs finish, then nothing more may start.
	time.Sleep(500 * time.Millisecond)
	before := len(jobsOf(t, env.Client, "kata"))
	time.Sleep(2 * time.Second)
	if after := len(jobsOf(t, env.Client, "kata")); after != before || after >= 12 {
		t.Errorf("the rollout went on after the failure: %d then %d Jobs", before, after)
	}
	if c := condition(getShim(t, env.Client, "kata"), v1alpha1.ConditionProgressing); c.Status != metav1.ConditionFalse || c.Reason != "Halted" {
		t.Errorf("Progressing %+v", c)
	}
}

// TestUpgradeRolls: a new location rolls out node by node under maxUpdate.
func TestUpgradeRolls(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	createNodes(t, env.Client, 10, nil, "n")
	k := startKubelet(t, env, 100*time.Millisecond, nil)
	startOperator(t, env)
	shim := newShim("gvisor", "runsc", "3", nil)
	if err := env.Client.Create(ctx, shim); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "Ready", ready(env.Client, "gvisor"))
	v1 := getShim(t, env.Client, "gvisor").Status.SpecHash

	updateShim(t, env.Client, "gvisor", func(s *v1alpha1.Shim) {
		s.Spec.FetchStrategy.AnonHTTP.Location = "https://artifacts.invalid/runsc-v2.tar.gz"
	})
	waitFor(t, 5*time.Second, "the new spec hash", func() (bool, string) {
		s := getShim(t, env.Client, "gvisor")
		return s.Status.SpecHash != v1 && s.Status.SpecHash != "", s.Status.SpecHash
	})
	waitFor(t, 30*time.Second, "Ready after the upgrade", ready(env.Client, "gvisor"))
	v2 := getShim(t, env.Client, "gvisor").Status.SpecHash
	for node, hash := range nodesWith(t, env.Client, "gvisor") {
		if hash != v2 {
			t.Errorf("%s at %s, want %s", node, hash, v2)
		}
	}
	if k.maxRunning("gvisor") > 3 {
		t.Errorf("%d Jobs at once, maxUpdate 3", k.maxRunning("gvisor"))
	}
	if n := len(jobsOf(t, env.Client, "gvisor")); n != 20 {
		t.Errorf("%d Jobs, want 10 installs and 10 upgrades", n)
	}
}

// TestNodesJoinAndLeave: a node that joins and matches is installed; one
// that stops matching is uninstalled.
func TestNodesJoinAndLeave(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	createNodes(t, env.Client, 3, map[string]string{"wasm": "true"}, "n")
	startKubelet(t, env, 50*time.Millisecond, nil)
	startOperator(t, env)
	if err := env.Client.Create(ctx, newShim("spin", "spin", "1", map[string]string{"wasm": "true"})); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "Ready", ready(env.Client, "spin"))

	createNodes(t, env.Client, 1, map[string]string{"wasm": "true"}, "late")
	waitFor(t, 20*time.Second, "the late node installed", func() (bool, string) {
		_, ok := nodesWith(t, env.Client, "spin")["late-0000"]
		return ok, fmt.Sprint(nodesWith(t, env.Client, "spin"))
	})

	node := &corev1.Node{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "n-0001"}, node); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(node.DeepCopy())
	delete(node.Labels, "wasm")
	if err := env.Client.Patch(ctx, node, patch); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "n-0001 uninstalled", func() (bool, string) {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "n-0001"}, node); err != nil {
			return false, err.Error()
		}
		_, labelled := node.Labels[nodelabel.Key("spin")]
		return !labelled, fmt.Sprint(node.Labels)
	})
	waitFor(t, 20*time.Second, "Ready with 3 nodes", func() (bool, string) {
		s := getShim(t, env.Client, "spin")
		ok, msg := ready(env.Client, "spin")()
		return ok && s.Status.Nodes == 3 && s.Status.UpdatedNodes == 3, msg
	})
}

// TestDeleteUninstallsEverywhere: deleting the Shim uninstalls it from
// every node under the rollout strategy; the RuntimeClass goes only after
// the last node is clean, then the Shim itself.
func TestDeleteUninstallsEverywhere(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	createNodes(t, env.Client, 6, nil, "n")
	k := startKubelet(t, env, 100*time.Millisecond, nil)
	startOperator(t, env)
	if err := env.Client.Create(ctx, newShim("wasm", "wasmtime", "2", nil)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "Ready", ready(env.Client, "wasm"))
	if err := env.Client.Delete(ctx, getShim(t, env.Client, "wasm")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		labelled := len(nodesWith(t, env.Client, "wasm"))
		var nodes corev1.NodeList
		_ = env.Client.List(ctx, &nodes, client.MatchingLabelsSelector{Selector: nodelabel.AnySelector("wasm")})
		rcErr := env.Client.Get(ctx, client.ObjectKey{Name: "wasmtime-rc"}, &nodev1.RuntimeClass{})
		if apierrors.IsNotFound(rcErr) && len(nodes.Items) > 0 {
			t.Fatalf("the RuntimeClass is gone while %d nodes still have the shim", len(nodes.Items))
		}
		shimErr := env.Client.Get(ctx, client.ObjectKey{Name: "wasm"}, &v1alpha1.Shim{})
		if apierrors.IsNotFound(shimErr) {
			if !apierrors.IsNotFound(rcErr) && env.Client.Get(ctx, client.ObjectKey{Name: "wasmtime-rc"}, &nodev1.RuntimeClass{}) == nil {
				t.Fatal("the Shim is gone but its RuntimeClass stays")
			}
			if labelled != 0 || len(nodes.Items) != 0 {
				t.Fatalf("the Shim is gone but %d nodes are labelled", len(nodes.Items))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Shim was not removed: %d nodes labelled", len(nodes.Items))
		}
		time.Sleep(20 * time.Millisecond)
	}
	uninstalls := 0
	for _, j := range jobsOf(t, env.Client, "wasm") {
		if j.Labels["shim.containerd.x-k8s.io/op"] == "uninstall" {
			uninstalls++
		}
	}
	if uninstalls != 6 || k.maxRunning("wasm") > 2 {
		t.Errorf("%d uninstall Jobs (want 6), %d at once (maxUpdate 2)", uninstalls, k.maxRunning("wasm"))
	}
}

// TestDeleteDuringInstall: a Shim deleted while its install Jobs run waits
// for them, then uninstalls what they installed.
func TestDeleteDuringInstall(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	createNodes(t, env.Client, 6, nil, "n")
	startKubelet(t, env, 700*time.Millisecond, nil)
	startOperator(t, env)
	if err := env.Client.Create(ctx, newShim("spin", "spin", "3", nil)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "install Jobs", func() (bool, string) { return len(jobsOf(t, env.Client, "spin")) > 0, "" })
	if err := env.Client.Delete(ctx, getShim(t, env.Client, "spin")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the Shim gone", func() (bool, string) {
		err := env.Client.Get(ctx, client.ObjectKey{Name: "spin"}, &v1alpha1.Shim{})
		return apierrors.IsNotFound(err), fmt.Sprint(nodesWith(t, env.Client, "spin"))
	})
	var nodes corev1.NodeList
	if err := env.Client.List(ctx, &nodes, client.MatchingLabelsSelector{Selector: nodelabel.AnySelector("spin")}); err != nil || len(nodes.Items) != 0 {
		t.Errorf("%d nodes still labelled", len(nodes.Items))
	}
}

// TestOperatorRestartMidRollout: a new operator process resumes the rollout
// without duplicating Jobs or exceeding maxUpdate.
func TestOperatorRestartMidRollout(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	createNodes(t, env.Client, 15, nil, "n")
	k := startKubelet(t, env, 400*time.Millisecond, nil)
	stop := startOperator(t, env)
	if err := env.Client.Create(ctx, newShim("spin", "spin", "3", nil)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "some progress", func() (bool, string) {
		return len(nodesWith(t, env.Client, "spin")) >= 4, ""
	})
	stop()
	startOperator(t, env)
	waitFor(t, 60*time.Second, "Ready", ready(env.Client, "spin"))
	if k.maxRunning("spin") > 3 {
		t.Errorf("%d Jobs at once, maxUpdate 3", k.maxRunning("spin"))
	}
	perNode := map[string]int{}
	for _, j := range jobsOf(t, env.Client, "spin") {
		perNode[j.Labels["shim.containerd.x-k8s.io/node"]]++
	}
	for node, n := range perNode {
		if n != 1 {
			t.Errorf("node %s got %d Jobs", node, n)
		}
	}
	if len(perNode) != 15 {
		t.Errorf("%d nodes got a Job, want 15", len(perNode))
	}
}

// TestTwoShimsSameNodes: two Shims on the same nodes roll out side by side.
func TestTwoShimsSameNodes(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	createNodes(t, env.Client, 8, nil, "n")
	startKubelet(t, env, 80*time.Millisecond, nil)
	startOperator(t, env)
	for _, s := range []*v1alpha1.Shim{newShim("spin", "spin", "2", nil), newShim("kata", "kata", "50%", nil)} {
		if err := env.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 30*time.Second, "spin Ready", ready(env.Client, "spin"))
	waitFor(t, 30*time.Second, "kata Ready", ready(env.Client, "kata"))
	if a, b := len(nodesWith(t, env.Client, "spin")), len(nodesWith(t, env.Client, "kata")); a != 8 || b != 8 {
		t.Errorf("spin on %d nodes, kata on %d", a, b)
	}
	for _, rc := range []string{"spin-rc", "kata-rc"} {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: rc}, &nodev1.RuntimeClass{}); err != nil {
			t.Error(err)
		}
	}
}
