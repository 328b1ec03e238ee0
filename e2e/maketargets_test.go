package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// testMakeTargets runs the familiar make targets against the cluster, the
// CRD already installed (by the chart).
func testMakeTargets(t *testing.T, c *testutil.Cluster) {
	ctx := context.Background()
	mk := func(args ...string) (string, error) {
		cmd := exec.Command("make", append([]string{"--no-print-directory", "KUBECTL=" + c.Kubectl}, args...)...)
		cmd.Dir = testutil.RepoRoot()
		cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	must := func(args ...string) {
		t.Helper()
		start := time.Now()
		if out, err := mk(args...); err != nil {
			t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("make %s: %s", strings.Join(args, " "), time.Since(start).Round(100*time.Millisecond))
	}
	tracked := gitStatus(t)

	must("uninstall")
	if crdPresent(c) {
		t.Fatal("make uninstall left the CRD")
	}
	must("install")
	if !crdPresent(c) {
		t.Fatal("make install: no CRD")
	}

	// make run: the operator here, against the cluster, until its
	// controllers run.
	run := exec.Command("make", "--no-print-directory", "run", "RUN_ARGS=--metrics-bind-address=0 --health-probe-bind-address=127.0.0.1:0")
	run.Dir = testutil.RepoRoot()
	run.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
	run.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var runOut syncBuffer
	run.Stdout, run.Stderr = &runOut, &runOut
	start := time.Now()
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_ = syscall.Kill(-run.Process.Pid, syscall.SIGTERM)
			_ = run.Wait()
		}
	}
	t.Cleanup(stop)
	waitFor(t, 150*time.Second, "make run's operator to start its controllers", func() bool {
		return strings.Contains(runOut.String(), "Starting workers")
	})
	stop()
	t.Logf("make run to running controllers: %s", time.Since(start).Round(100*time.Millisecond))

	img, instImg := operatorImage, installerImage
	must("deploy", "IMG="+img, "INSTALLER_IMG="+instImg)
	d := &appsv1.Deployment{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: "shimkit-system", Name: "shimkit-operator"}, d); err != nil {
		t.Fatalf("make deploy: %v", err)
	}
	ctr := d.Spec.Template.Spec.Containers[0]
	if ctr.Image != img {
		t.Errorf("make deploy: image %s, want %s", ctr.Image, img)
	}
	if env := envValue(ctr, "SHIMKIT_INSTALLER_IMAGE"); env != instImg {
		t.Errorf("make deploy: SHIMKIT_INSTALLER_IMAGE=%s, want %s", env, instImg)
	}
	// The pods cannot reach the API server in this cluster without the host
	// network (no kube-proxy), so the Deployment is checked, not its rollout.
	deployed := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shimkit-system"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "shimkit-system", Name: "shimkit-operator"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "shimkit-operator"}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "shimkit-operator"}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "shimkit-system", Name: "shimkit-operator"}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "shimkit-system", Name: "shimkit-operator-leader-election"}},
	}
	for _, o := range deployed {
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			t.Errorf("make deploy: %T %s: %v", o, o.GetName(), err)
		}
	}

	must("undeploy")
	for _, o := range append(deployed, d) {
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(o), o); !apierrors.IsNotFound(err) {
			t.Errorf("make undeploy left %T %s: %v", o, o.GetName(), err)
		}
	}
	if !crdPresent(c) {
		t.Error("make undeploy deleted the CRD")
	}

	// make uninstall refuses while a Shim exists.
	s := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "left"}, Spec: v1alpha1.ShimSpec{
		FetchStrategy: v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{Location: "http://127.0.0.1:1/x.tar.gz", SHA256: strings.Repeat("0", 64)}},
		RuntimeClass:  v1alpha1.RuntimeClassSpec{Name: "left", Handler: "left"},
	}}
	if err := c.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	if out, err := mk("uninstall"); err == nil || !strings.Contains(out, "Shims remain") {
		t.Errorf("make uninstall with a Shim left: %v\n%s", err, out)
	}
	if !crdPresent(c) {
		t.Fatal("make uninstall deleted the CRD with a Shim left")
	}
	if err := c.Client.Delete(ctx, s); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the Shim gone", func() bool {
		return apierrors.IsNotFound(c.Client.Get(ctx, client.ObjectKeyFromObject(s), &v1alpha1.Shim{}))
	})
	must("uninstall")
	if crdPresent(c) {
		t.Error("make uninstall left the CRD")
	}
	if now := gitStatus(t); now != tracked {
		t.Errorf("the make targets changed the work tree:\n%s\nwas\n%s", now, tracked)
	}
}

// crdPresent tells whether the Shim CRD exists (read as metadata only).
func crdPresent(c *testutil.Cluster) bool {
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	return c.Client.Get(context.Background(), client.ObjectKey{Name: crdName}, crd) == nil
}

func gitStatus(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("git", "status", "--porcelain", "--", "operator/config", "charts")
	cmd.Dir = testutil.RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git status: %v", err)
	}
	return string(out)
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a bytes.Buffer that a process writes while the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
