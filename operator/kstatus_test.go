package operator_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestKstatus: kstatus (sigs.k8s.io/cli-utils) and `kubectl wait
// --for=condition=Ready` agree with the Shim at each stage of its life:
// InProgress while it rolls out, Current once Ready, Failed when a failed
// node halts the rollout or the spec is refused or no node matches,
// InProgress then Current again once a good spec is applied, and
// Terminating while its nodes are cleaned up.
func TestKstatus(t *testing.T) {
	env := startCluster(t)
	kubectl := kubectlFor(t, env)
	ctx := context.Background()
	createNodes(t, env.Client, 3, nil, "n")
	var broken atomic.Bool
	startKubelet(t, env, 1500*time.Millisecond, func(*batchv1.Job) bool { return broken.Load() })
	startOperator(t, env)

	if err := env.Client.Create(ctx, newShim("wasm", "wasm", "1", nil)); err != nil {
		t.Fatal(err)
	}
	stage(t, env.Client, kubectl, "wasm", "rolling out", status.InProgressStatus, "")
	stage(t, env.Client, kubectl, "wasm", "rolled out", status.CurrentStatus, "")
	// Paused with a change to roll out: Argo CD shows it Suspended.
	updateShim(t, env.Client, "wasm", func(s *v1alpha1.Shim) {
		s.Spec.RolloutStrategy.Paused = true
		s.Spec.FetchStrategy.AnonHTTP.Location = "https://artifacts.invalid/wasm-paused.tar.gz"
	})
	stage(t, env.Client, kubectl, "wasm", "paused", status.InProgressStatus, "")
	updateShim(t, env.Client, "wasm", func(s *v1alpha1.Shim) { s.Spec.RolloutStrategy.Paused = false })
	stage(t, env.Client, kubectl, "wasm", "resumed", status.CurrentStatus, "")

	// A node fails the next spec: the rollout halts after it.
	broken.Store(true)
	updateShim(t, env.Client, "wasm", func(s *v1alpha1.Shim) {
		s.Spec.FetchStrategy.AnonHTTP.Location = "https://artifacts.invalid/wasm-v2.tar.gz"
	})
	stage(t, env.Client, kubectl, "wasm", "a node failed", status.FailedStatus, v1alpha1.ReasonNodeFailed)

	// A spec the operator refuses: a pull secret the Jobs could not mount.
	updateShim(t, env.Client, "wasm", func(s *v1alpha1.Shim) {
		s.Spec.FetchStrategy = v1alpha1.FetchStrategy{Type: v1alpha1.FetchOCI, OCI: &v1alpha1.OCIFetch{
			Reference: "registry.invalid/shims/wasm:v1", PullSecretRef: &v1alpha1.SecretReference{Name: "creds", Namespace: "tenant-a"},
		}}
	})
	stage(t, env.Client, kubectl, "wasm", "spec refused", status.FailedStatus, v1alpha1.ReasonPullSecretNamespace)

	// A good spec again: it rolls out.
	broken.Store(false)
	updateShim(t, env.Client, "wasm", func(s *v1alpha1.Shim) {
		s.Spec.FetchStrategy = newShim("wasm", "wasm", "1", nil).Spec.FetchStrategy
		s.Spec.FetchStrategy.AnonHTTP.Location = "https://artifacts.invalid/wasm-v3.tar.gz"
	})
	stage(t, env.Client, kubectl, "wasm", "rolling out the fix", status.InProgressStatus, "")
	stage(t, env.Client, kubectl, "wasm", "fix rolled out", status.CurrentStatus, "")

	// No node matches another Shim: nothing happens until one does.
	if err := env.Client.Create(ctx, newShim("lonely", "lonely", "1", map[string]string{"no": "such-node"})); err != nil {
		t.Fatal(err)
	}
	stage(t, env.Client, kubectl, "lonely", "no nodes", status.FailedStatus, v1alpha1.ReasonNoNodes)

	if err := env.Client.Delete(ctx, getShim(t, env.Client, "wasm")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "Terminating", func() (bool, string) {
		res, err := kstatusOf(env.Client, "wasm")
		return err == nil && res.Status == status.TerminatingStatus, fmt.Sprint(res, err)
	})
}

// stage waits until kstatus computes want for the Shim named shim, with the current
// generation observed, then checks the Stalled reason (stalled; "" when
// not stalled), that Reconciling and Stalled are never both True, and
// that `kubectl wait --for=condition=Ready` succeeds exactly when want is
// Current.
func stage(t *testing.T, c client.Client, kubectl func(args ...string) (string, error), shim, name string, want status.Status, stalled string) {
	t.Helper()
	start := time.Now()
	var res *status.Result
	waitFor(t, 30*time.Second, name+": kstatus "+want.String(), func() (bool, string) {
		var err error
		res, err = kstatusOf(c, shim)
		s := getShim(t, c, shim)
		return err == nil && res.Status == want && s.Status.ObservedGeneration == s.Generation, fmt.Sprintf("%v %v; %+v", res, err, s.Status.Conditions)
	})
	timeout := "1s"
	if want == status.CurrentStatus {
		timeout = "30s"
	}
	out, err := kubectl("wait", "--for=condition=Ready", "shim/"+shim, "--timeout="+timeout)
	switch {
	case want == status.CurrentStatus && err != nil:
		t.Errorf("%s: kubectl wait: %v\n%s", name, err, out)
	case want != status.CurrentStatus && err == nil:
		t.Errorf("%s: kubectl wait succeeded on a Shim kstatus computes %s:\n%s", name, want, out)
	case want != status.CurrentStatus && !strings.Contains(out, "timed out"):
		t.Errorf("%s: kubectl wait failed, not by timing out:\n%s", name, out)
	}

	s := getShim(t, c, shim)
	rec, st := condition(s, v1alpha1.ConditionReconciling), condition(s, v1alpha1.ConditionStalled)
	if rec == nil || st == nil {
		t.Fatalf("%s: no Reconciling or Stalled condition: %+v", name, s.Status.Conditions)
	}
	for _, c := range []*metav1.Condition{rec, st} {
		if c.ObservedGeneration != s.Generation || c.Reason == "" {
			t.Errorf("%s: %s %+v (generation %d)", name, c.Type, c, s.Generation)
		}
	}
	if rec.Status == metav1.ConditionTrue && st.Status == metav1.ConditionTrue {
		t.Errorf("%s: Reconciling and Stalled both True", name)
	}
	if (st.Status == metav1.ConditionTrue) != (stalled != "") || stalled != "" && st.Reason != stalled {
		t.Errorf("%s: Stalled %+v, want reason %q", name, st, stalled)
	}
	argoHealth(t, s, name, want)
	summary := make([]string, 0, len(s.Status.Conditions))
	for _, c := range s.Status.Conditions {
		summary = append(summary, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
	}
	t.Logf("%s (%v): kstatus %s (%s); %s", name, time.Since(start).Round(time.Millisecond), res.Status, res.Message, strings.Join(summary, " "))
}

// kstatusOf computes the Shim's kstatus from its unstructured form, as
// kstatus-based tools (Flux, Config Sync, kpt) read it.
func kstatusOf(c client.Client, name string) (*status.Result, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("Shim"))
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, u); err != nil {
		return nil, err
	}
	return status.Compute(u)
}

// updateShim changes the Shim's spec, again on a conflict.
func updateShim(t *testing.T, c client.Client, name string, change func(*v1alpha1.Shim)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s := getShim(t, c, name)
		change(s)
		return c.Update(context.Background(), s)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// kubectlFor returns a runner of the kubectl that hack/bins.sh builds,
// with an admin kubeconfig for env's API server.
func kubectlFor(t *testing.T, env *testutil.Env) func(args ...string) (string, error) {
	t.Helper()
	bin := filepath.Join(testutil.BinDir(t, "kube", "KUBE_VERSION", "kubectl"), "kubectl")
	kubeconfig := testutil.WriteKubeconfig(t, env.Config, filepath.Join(t.TempDir(), "kubeconfig"))
	return func(args ...string) (string, error) {
		out, err := exec.Command(bin, append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
		return string(out), err
	}
}
