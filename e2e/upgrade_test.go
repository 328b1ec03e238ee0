package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// releaseNamespace is where the tutorial installs shimkit.
const releaseNamespace = "shimkit-system"

// testOperatorUpgrade labels every node for the tutorial's Shim, waits for
// it Ready on all of them, then upgrades the release to the second build
// with helm: the operator's upgrade is not a fleet rollout.
func testOperatorUpgrade(t *testing.T, c *testutil.Cluster, nodes []testutil.ClusterNode, next published, tools string, env []string) {
	ctx := context.Background()
	shim := &v1alpha1.Shim{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: "spin"}, shim); err != nil {
		t.Fatalf("the tutorial's Shim spin: %v", err)
	}
	for _, n := range nodes {
		for k, v := range shim.Spec.NodeSelector {
			kubectl(t, c, "label", "node", n.Name, k+"="+v, "--overwrite")
		}
	}
	waitFor(t, 5*time.Minute, "Shim spin Ready on every node", func() bool {
		s := &v1alpha1.Shim{}
		return c.Client.Get(ctx, client.ObjectKey{Name: "spin"}, s) == nil && meta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.ConditionReady) &&
			s.Status.ObservedGeneration == s.Generation && int(s.Status.Nodes) == len(nodes) && int(s.Status.UpdatedNodes) == len(nodes)
	})
	if err := c.Client.Get(ctx, client.ObjectKey{Name: "spin"}, shim); err != nil {
		t.Fatal(err)
	}
	ready := meta.FindStatusCondition(shim.Status.Conditions, v1alpha1.ConditionReady)
	runtimes := runtimeStarts(t, nodes)
	jobs := jobNames(t, c, releaseNamespace)
	oldPod := operatorPod(t, c, releaseNamespace)
	oldLeader := leaseHolder(t, c, releaseNamespace)
	flips := watchReady(c, "spin")

	start := time.Now()
	helm := exec.Command(filepath.Join(tools, "helm"), "upgrade", "shimkit", next.chart, "--version", strings.TrimPrefix(next.version, "v"), "-n", releaseNamespace, "--wait", "--timeout", "2m")
	helm.Env = env
	if out, err := helm.CombinedOutput(); err != nil {
		t.Fatalf("helm upgrade to %s: %v\n%s", next.version, err, out)
	}
	waitFor(t, 60*time.Second, "the old operator pod to go", func() bool {
		return apierrors.IsNotFound(c.Client.Get(ctx, client.ObjectKeyFromObject(oldPod), &corev1.Pod{}))
	})
	newPod := operatorPod(t, c, releaseNamespace)
	if img, inst := newPod.Spec.Containers[0].Image, envValue(newPod.Spec.Containers[0], "SHIMKIT_INSTALLER_IMAGE"); img != next.images["shimkit-operator"] || inst != next.images["shimkit-installer"] {
		t.Errorf("the upgraded operator runs %s with the installer %s; want %s and %s", img, inst, next.images["shimkit-operator"], next.images["shimkit-installer"])
	}
	waitFor(t, 60*time.Second, "the new operator to lead", func() bool {
		h := leaseHolder(t, c, releaseNamespace)
		return h != "" && h != oldLeader
	})
	waitFor(t, 30*time.Second, "the new operator's controllers to start", func() bool {
		return strings.Contains(podLog(c, newPod), "Starting workers")
	})
	// A few reconciles of the new operator: it finds the Shim done.
	time.Sleep(5 * time.Second)
	t.Logf("helm upgrade to %s, the new operator leading: %s", next.version, time.Since(start).Round(time.Second))
	checkUntouched(t, c, shim, ready, flips(), runtimes, nodes, jobs)
}

// checkUntouched checks that an operator upgrade left the fleet alone: the
// Shim stayed Ready (the same transition), kept its target, and no node's
// runtime restarted and no installer Job started.
func checkUntouched(t *testing.T, c *testutil.Cluster, shim *v1alpha1.Shim, ready *metav1.Condition, flips []string, runtimes map[string]string, nodes []testutil.ClusterNode, jobs string) {
	t.Helper()
	now := &v1alpha1.Shim{}
	if err := c.Client.Get(context.Background(), client.ObjectKey{Name: "spin"}, now); err != nil {
		t.Fatal(err)
	}
	cond := meta.FindStatusCondition(now.Status.Conditions, v1alpha1.ConditionReady)
	if len(flips) > 0 || cond == nil || cond.Status != metav1.ConditionTrue || !cond.LastTransitionTime.Equal(&ready.LastTransitionTime) || now.Status.SpecHash != shim.Status.SpecHash {
		t.Errorf("the Shim did not stay Ready across the operator's upgrade: seen %q; before %+v (%s), after %+v (%s)", flips, ready, shim.Status.SpecHash, cond, now.Status.SpecHash)
	}
	for node, was := range runtimeStarts(t, nodes) {
		if was != runtimes[node] {
			t.Errorf("containerd of %s restarted during the operator's upgrade: %s, then %s", node, runtimes[node], was)
		}
	}
	if got := jobNames(t, c, releaseNamespace); got != jobs {
		t.Errorf("the operator's upgrade ran installer Jobs: before %q, after %q", jobs, got)
	}
}

// runtimeStarts returns each node's containerd main PID and the time it
// entered active: both change with a restart.
func runtimeStarts(t *testing.T, nodes []testutil.ClusterNode) map[string]string {
	t.Helper()
	starts := map[string]string{}
	for _, n := range nodes {
		starts[n.Name] = n.UnitProp(t, "containerd", "MainPID") + " since " + n.UnitProp(t, "containerd", "ActiveEnterTimestampMonotonic")
	}
	return starts
}

// watchReady polls the Shim's Ready condition every 200 ms until the
// returned function is called, which returns every state seen that was not
// Ready=True.
func watchReady(c *testutil.Cluster, name string) func() []string {
	var (
		mu   sync.Mutex
		seen []string
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			s := &v1alpha1.Shim{}
			err := c.Client.Get(context.Background(), client.ObjectKey{Name: name}, s)
			if cond := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReady); err == nil && (cond == nil || cond.Status != metav1.ConditionTrue) {
				mu.Lock()
				seen = append(seen, time.Now().Format(time.RFC3339Nano)+" "+condString(cond))
				mu.Unlock()
			}
			select {
			case <-done:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return func() []string {
		close(done)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

func condString(c *metav1.Condition) string {
	if c == nil {
		return "no Ready condition"
	}
	return "Ready=" + string(c.Status) + " (" + c.Reason + ")"
}
