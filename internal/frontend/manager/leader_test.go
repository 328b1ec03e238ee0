package manager_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

const (
	leaseName      = "shimkit-operator.containerd.x-k8s.io"
	namespace      = "shimkit-system"
	serviceAccount = "system:serviceaccount:shimkit-system:shimkit-operator"
)

// TestLeaderHandover runs two replicas of the operator binary as its
// ServiceAccount with only the shipped RBAC (operator/config/rbac): the
// first leads; on its SIGTERM it gives the Lease up, and the second takes
// over within a few seconds (a Lease left to expire took 15-18 s on a real
// cluster). The election's Events, which client-go records through the
// core API, are allowed: the first start logged "events is forbidden" and
// the Event was lost.
func TestLeaderHandover(t *testing.T) {
	env := testutil.StartEnv(t, v1alpha1.AddToScheme)
	ctx := context.Background()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"service_account.yaml", "role.yaml", "role_binding.yaml", "leader_election_role.yaml"} {
		testutil.ApplyFile(t, env.Client, filepath.Join(testutil.RepoRoot(), "operator/config/rbac", f))
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: serviceAccount}
	kubeconfig := testutil.WriteKubeconfig(t, cfg, filepath.Join(t.TempDir(), "kubeconfig"))
	bin := testutil.GoBuild(t, "./cmd/shimkit-operator", filepath.Join(t.TempDir(), "shimkit-operator"), "-ldflags=-w")

	first := startReplica(t, bin, kubeconfig)
	holder := waitLeader(t, env.Client, "", 30*time.Second)
	second := startReplica(t, bin, kubeconfig)
	time.Sleep(3 * time.Second) // the second is a candidate, retrying
	if got := leader(ctx, env.Client); got != holder {
		t.Fatalf("the Lease moved to %q before the leader stopped", got)
	}
	start := time.Now()
	first.stop(t)
	next := waitLeader(t, env.Client, holder, 15*time.Second)
	took := time.Since(start)
	t.Logf("leader %s stopped; %s leads after %v", holder, next, took.Round(100*time.Millisecond))
	if took > 8*time.Second {
		t.Errorf("the next leader took over after %v, want within a retry period or two (the Lease is released on SIGTERM)", took)
	}
	waitEvent(t, env.Client, holder)
	second.stop(t)
	for _, r := range []*replica{first, second} {
		if out := r.output(); strings.Contains(out, "forbidden") || strings.Contains(out, "out of phase") {
			t.Errorf("a replica's log has an RBAC error or a reconcile out of phase:\n%s", out)
		}
	}
}

// replica is one operator process and its log.
type replica struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	log  bytes.Buffer
	done chan error
}

func (r *replica) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log.Write(p)
}

func (r *replica) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log.String()
}

func startReplica(t *testing.T, bin, kubeconfig string) *replica {
	t.Helper()
	r := &replica{done: make(chan error, 1)}
	r.cmd = exec.Command(bin, "--kubeconfig", kubeconfig, "--leader-elect", "--namespace", namespace,
		"--installer-image", "shimkit-installer:test", "--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--check-phases")
	r.cmd.Stdout, r.cmd.Stderr = r, r
	r.cmd.Env = append(os.Environ(), "POD_NAMESPACE="+namespace)
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.done <- r.cmd.Wait() }()
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			_ = r.cmd.Process.Kill()
		}
	})
	return r
}

// stop sends SIGTERM, as the kubelet does, and waits for a clean exit.
func (r *replica) stop(t *testing.T) {
	t.Helper()
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("replica exited with %v after SIGTERM:\n%s", err, r.output())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("replica still runs 30 s after SIGTERM:\n%s", r.output())
	}
}

func leader(ctx context.Context, c client.Client) string {
	var l coordinationv1.Lease
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: leaseName}, &l); err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// waitLeader waits for a holder of the Lease other than not (and not
// none) and returns it.
func waitLeader(t *testing.T, c client.Client, not string, within time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if h := leader(context.Background(), c); h != "" && h != not {
			return h
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no leader other than %q within %v", not, within)
	return ""
}

// waitEvent waits for the election's core Event naming the holder.
func waitEvent(t *testing.T, c client.Client, holder string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		var events corev1.EventList
		if err := c.List(context.Background(), &events, client.InNamespace(namespace)); err != nil {
			t.Fatal(err)
		}
		for _, e := range events.Items {
			if e.Reason == "LeaderElection" && strings.Contains(e.Message, holder) {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Errorf("no LeaderElection Event of %s in %s", holder, namespace)
}
