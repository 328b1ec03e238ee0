package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

const (
	crdName = "shims.containerd.x-k8s.io"
	// helmNamespace is the release namespace: not the manifests'
	// shimkit-system, so that a name the chart does not template shows.
	helmNamespace = "shimkit"
	leaseName     = "shimkit-operator.containerd.x-k8s.io"
)

// testChart installs the operator with charts/shimkit on the cluster,
// rolls out the chart's sample Shim on the first node, upgrades the
// release with a changed operator flag, and uninstalls it.
func testChart(t *testing.T, c *testutil.Cluster, helmBin string, build testutil.ContainerdBuild) {
	ctx := context.Background()
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := exec.Command(c.Kubectl, "--kubeconfig", c.Kubeconfig, "-n", helmNamespace, "get", "all,lease,sa,role,rolebinding", "-o", "wide").CombinedOutput()
			t.Logf("namespace %s:\n%s", helmNamespace, out)
		}
	})
	// The chart's crds/ install the CRD (undeployOperator took the one of
	// operator/config).
	kubectl(t, c, "delete", "crd", crdName, "--wait", "--ignore-not-found")

	srv := c.StartFileServer(t)
	art := testutil.NewShimArchive(t, "helm", build.Binary("containerd-shim-runc-v2"), nil)
	url := srv.Add("/helm.tar.gz", art.Data)
	opRepo, opTag, _ := strings.Cut(operatorImage, ":")
	instRepo, instTag, _ := strings.Cut(installerImage, ":")
	host, port, _ := strings.Cut(strings.TrimPrefix(c.Config.Host, "https://"), ":")
	// Without kube-proxy, pods reach the API server only over the host's
	// network: the operator runs there, its probes on a port of its own.
	values := filepath.Join(t.TempDir(), "values.yaml")
	writeFile(t, values, fmt.Sprintf(`image: {repository: %s, tag: %s, pullPolicy: Never}
installer:
  image: {repository: %s, tag: %s}
hostNetwork: true
strategy: {type: Recreate}
terminationGracePeriodSeconds: 1
metrics: {enabled: false}
healthProbe: {port: 18082}
extraEnv:
  - {name: KUBERNETES_SERVICE_HOST, value: %q}
  - {name: KUBERNETES_SERVICE_PORT, value: %q}
sampleShim:
  enabled: true
  name: helm
  spec:
    nodeSelector: {kubernetes.io/hostname: %s}
    fetchStrategy: {type: anonHttp, anonHttp: {location: %q, sha256: %q}}
    runtimeClass: {name: helm, handler: helm}
`, opRepo, opTag, instRepo, instTag, host, port, c.NodeName, url, art.SHA256))
	helm := func(args ...string) string { return runHelm(t, c, helmBin, args...) }
	chart := filepath.Join(testutil.RepoRoot(), "charts", "shimkit")

	start := time.Now()
	helm("install", "shimkit", chart, "-n", helmNamespace, "--create-namespace", "-f", values, "--wait", "--timeout", "2m")
	kubectl(t, c, "wait", "--for=condition=Established", "crd/"+crdName, "--timeout=30s")
	kubectl(t, c, "wait", "--for=condition=Ready", "shim/helm", "--timeout=120s")
	t.Logf("helm install to a Ready Shim: %s", time.Since(start).Round(time.Second))
	if err := c.Client.Get(ctx, client.ObjectKey{Name: "helm"}, &nodev1.RuntimeClass{}); err != nil {
		t.Fatalf("RuntimeClass helm: %v", err)
	}
	shim := &v1alpha1.Shim{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: "helm"}, shim); err != nil {
		t.Fatal(err)
	}
	ready := meta.FindStatusCondition(shim.Status.Conditions, v1alpha1.ConditionReady)
	hash := shim.Status.SpecHash
	jobs := jobNames(t, c, helmNamespace)
	oldPod := operatorPod(t, c, helmNamespace)
	oldLeader := leaseHolder(t, c, helmNamespace)

	// Upgrade: CRDs first, as the chart's NOTES and the README say (helm
	// upgrade never touches crds/), then a changed operator flag.
	kubectl(t, c, "apply", "--server-side", "-f", filepath.Join(chart, "crds"))
	start = time.Now()
	helm("upgrade", "shimkit", chart, "-n", helmNamespace, "-f", values, "--set", "installer.jobTTL=30m", "--wait", "--timeout", "2m")
	waitFor(t, 60*time.Second, "the old operator pod to go", func() bool {
		return apierrors.IsNotFound(c.Client.Get(ctx, client.ObjectKeyFromObject(oldPod), &corev1.Pod{}))
	})
	newPod := operatorPod(t, c, helmNamespace)
	if newPod.UID == oldPod.UID {
		t.Fatal("the operator pod did not restart")
	}
	if args := strings.Join(newPod.Spec.Containers[0].Args, " "); !strings.Contains(args, "--job-ttl=30m") {
		t.Errorf("the upgraded operator runs with %s, want --job-ttl=30m", args)
	}
	// The new operator leads and its controllers run; it finds the Shim
	// done: nothing is reinstalled and Ready never flipped.
	waitFor(t, 60*time.Second, "the new operator to lead", func() bool {
		h := leaseHolder(t, c, helmNamespace)
		return h != "" && h != oldLeader
	})
	waitFor(t, 30*time.Second, "the new operator's controllers to start", func() bool {
		return strings.Contains(podLog(c, newPod), "Starting workers")
	})
	time.Sleep(3 * time.Second)
	if err := c.Client.Get(ctx, client.ObjectKey{Name: "helm"}, shim); err != nil {
		t.Fatal(err)
	}
	now := meta.FindStatusCondition(shim.Status.Conditions, v1alpha1.ConditionReady)
	if now == nil || now.Status != metav1.ConditionTrue || !now.LastTransitionTime.Equal(&ready.LastTransitionTime) || shim.Status.SpecHash != hash {
		t.Errorf("the Shim did not stay Ready across the upgrade: before %+v (%s), after %+v (%s)", ready, hash, now, shim.Status.SpecHash)
	}
	if got := jobNames(t, c, helmNamespace); got != jobs {
		t.Errorf("the upgrade ran installer Jobs: before %q, after %q", jobs, got)
	}
	node := &corev1.Node{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: c.NodeName}, node); err != nil {
		t.Fatal(err)
	}
	if ok, h := nodelabel.State(node, "helm"); !ok || h != hash {
		t.Errorf("node label of helm after the upgrade: %v %s, want %s", ok, h, hash)
	}
	t.Logf("helm upgrade to the new operator leading: %s", time.Since(start).Round(time.Second))

	// Shims are deleted while the operator runs; helm leaves them (keep).
	start = time.Now()
	if err := c.Client.Delete(ctx, shim); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 120*time.Second, "the Shim gone", func() bool {
		return apierrors.IsNotFound(c.Client.Get(ctx, client.ObjectKey{Name: "helm"}, &v1alpha1.Shim{}))
	})
	helm("uninstall", "shimkit", "-n", helmNamespace, "--wait", "--timeout", "2m")
	t.Logf("Shim deletion and helm uninstall: %s", time.Since(start).Round(time.Second))

	if out := helm("list", "-n", helmNamespace, "-q"); strings.TrimSpace(out) != "" {
		t.Errorf("helm still lists %q", out)
	}
	// The CRD stays (crds/: helm uninstall never deletes it) ...
	if !crdPresent(c) {
		t.Error("the CRD went with helm uninstall")
	}
	// ... and nothing of the operator does: the cluster-wide objects go, and
	// the namespace keeps only what Kubernetes puts in every namespace and
	// the leader-election Lease (the operator's, not Helm's).
	for _, o := range []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "shimkit-operator"}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "shimkit-operator"}},
		&nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "helm"}},
	} {
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(o), o); !apierrors.IsNotFound(err) {
			t.Errorf("%T %s left: %v", o, o.GetName(), err)
		}
	}
	waitFor(t, 60*time.Second, "the operator's pods to go", func() bool {
		pods := &corev1.PodList{}
		_ = c.Client.List(ctx, pods, client.InNamespace(helmNamespace))
		return len(pods.Items) == 0
	})
	out := kubectl(t, c, "-n", helmNamespace, "get",
		"deployments,replicasets,pods,jobs,serviceaccounts,roles,rolebindings,configmaps,secrets,services,leases", "-o", "name")
	var left []string
	for _, name := range strings.Fields(out) {
		switch name {
		case "serviceaccount/default", "configmap/kube-root-ca.crt", "lease.coordination.k8s.io/" + leaseName:
		default:
			left = append(left, name)
		}
	}
	if len(left) > 0 {
		t.Errorf("helm uninstall left in namespace %s: %v", helmNamespace, left)
	}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: c.NodeName}, node); err != nil {
		t.Fatal(err)
	}
	for k := range node.Labels {
		if strings.HasPrefix(k, nodelabel.Prefix) {
			t.Errorf("node label %s left", k)
		}
	}
	kubectl(t, c, "delete", "namespace", helmNamespace, "--wait=false")
}

// toolBinary returns the tool from $env (when env is set) or bin/name:
// make test builds both before the tests.
func toolBinary(t *testing.T, env, name string) string {
	t.Helper()
	var p string
	if env != "" {
		p = os.Getenv(env)
	}
	if p == "" {
		p = filepath.Join(testutil.RepoRoot(), "bin", name)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s: %v (build it with `make tools`)", name, err)
	}
	return p
}

// runHelm runs helm against the cluster, with its configuration and caches
// in a temporary directory.
func runHelm(t *testing.T, c *testutil.Cluster, helm string, args ...string) string {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(helm, append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home, "HELM_CACHE_HOME="+home, "HELM_DATA_HOME="+home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func operatorPod(t *testing.T, c *testutil.Cluster, ns string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	waitFor(t, 60*time.Second, "one running operator pod", func() bool {
		pods := &corev1.PodList{}
		if err := c.Client.List(context.Background(), pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/name": "shimkit-operator"}); err != nil || len(pods.Items) != 1 {
			return false
		}
		pod = &pods.Items[0]
		return pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil
	})
	return pod
}

func leaseHolder(t *testing.T, c *testutil.Cluster, ns string) string {
	t.Helper()
	l := &coordinationv1.Lease{}
	if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: leaseName}, l); err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func jobNames(t *testing.T, c *testutil.Cluster, ns string) string {
	t.Helper()
	return strings.Join(strings.Fields(kubectl(t, c, "-n", ns, "get", "jobs", "-o", "name")), " ")
}

// podLog reads a pod's container logs on the node.
// podLog reads the pod's container logs on the node it runs on.
func podLog(c *testutil.Cluster, p *corev1.Pod) string {
	node := c.Node
	for _, n := range c.Nodes {
		if n.Name == p.Spec.NodeName {
			node = n.Node
		}
	}
	logs, _ := filepath.Glob(node.Local(fmt.Sprintf("/var/log/pods/%s_%s_%s/*/*.log", p.Namespace, p.Name, p.UID)))
	var b strings.Builder
	for _, l := range logs {
		data, _ := os.ReadFile(l)
		b.Write(data)
	}
	return b.String()
}

func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}
