//go:build demo

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestDemo is `make demo`: a local single-node cluster, the operator, a
// sample Shim rolled out with visible progress, and a pod running on it.
// It keeps the cluster until Ctrl-C, or tears it down at once with
// SHIMKIT_DEMO_UNATTENDED=1.
func TestDemo(t *testing.T) {
	began := time.Now()
	// Each step with the time since the demo began: the first run builds
	// the images' binaries, which takes minutes.
	say := func(format string, args ...any) {
		fmt.Printf("==> %4ds  "+format+"\n", append([]any{int(time.Since(began).Seconds())}, args...)...)
	}
	ctx := context.Background()
	build := testutil.ContainerdMatrix(t)[2]

	say("starting a single-node cluster: etcd, kube-apiserver, controller-manager, scheduler; kubelet and containerd %s as systemd units in a node sandbox", build.Version)
	start := time.Now()
	c := testutil.StartCluster(t, build, v1alpha1.AddToScheme)
	kubeconfig := filepath.Join(testutil.RepoRoot(), ".demo", "kubeconfig")
	if err := os.MkdirAll(filepath.Dir(kubeconfig), 0o755); err != nil {
		t.Fatal(err)
	}
	testutil.WriteKubeconfig(t, c.Config, kubeconfig)
	say("node %s Ready after %v", c.NodeName, time.Since(start).Round(time.Millisecond))

	say("building the operator and installer images (no Docker) and loading them onto the node")
	loadImages(t, c)
	say("deploying the operator: kubectl apply -k operator/config/default (+ a local overlay)")
	deployOperator(t, c)

	srv := c.StartFileServer(t)
	shim := testutil.NewShimArchive(t, "demo", build.Binary("containerd-shim-runc-v2"), nil)
	url := srv.Add("/containerd-shim-demo-v2.tar.gz", shim.Data)
	s := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "demo"}, Spec: v1alpha1.ShimSpec{
		FetchStrategy: v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{Location: url, SHA256: shim.SHA256}},
		RuntimeClass:  v1alpha1.RuntimeClassSpec{Name: "demo", Handler: "demo"},
	}}
	say("applying Shim %q: fetch %s (sha256 %s…), handler %q, RuntimeClass %q", s.Name, url, shim.SHA256[:12], s.Spec.RuntimeClass.Handler, s.Spec.RuntimeClass.Name)
	if err := c.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	last := ""
	waitFor(t, 3*time.Minute, "the Shim to be Ready", func() bool {
		_ = c.Client.Get(ctx, client.ObjectKey{Name: "demo"}, s)
		line := progressLine(s)
		if line != last {
			say("%s", line)
			last = line
		}
		for _, cond := range s.Status.Conditions {
			if cond.Type == v1alpha1.ConditionReady && cond.Status == metav1.ConditionTrue {
				say("Ready: %s", cond.Message)
				return true
			}
		}
		return false
	})

	say("running a pod with runtimeClassName: demo")
	exe := runPod(t, c, c.Nodes[0], "demo-pod", "demo")
	say("pod demo-pod runs; its sandbox's shim process is %s (the installed binary)", exe)

	fmt.Printf(`
Look around (the cluster stays up until Ctrl-C):
  export KUBECONFIG=%s
  %s get shims                  # RuntimeClass, Handler, Ready, Nodes, Up-to-date
  %s describe shim demo          # conditions and events
  %s get runtimeclass demo -o yaml
  %s get nodes --show-labels     # shim.containerd.x-k8s.io/demo=installed
  %s get pods -o wide
  %s -n shimkit-system get jobs,pods
`, kubeconfig, c.Kubectl, c.Kubectl, c.Kubectl, c.Kubectl, c.Kubectl, c.Kubectl)
	if os.Getenv("SHIMKIT_DEMO_UNATTENDED") == "" {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		<-sig
		signal.Stop(sig)
	}
	say("tearing the cluster down")
	_ = c.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "demo-pod", Namespace: "default"}}, client.GracePeriodSeconds(0))
	_ = os.Remove(kubeconfig)
}
