package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// testRefusal: a Shim whose handler the admin already defined on the node
// is refused there (Conflict) by one installer pod: the Job's
// podFailurePolicy ends it at once, not after its retries. The admin
// removes their handler, deletes the Shim and applies the same YAML again:
// nothing of the first Shim is left on the node, and the new one installs.
func testRefusal(t *testing.T, c *testutil.Cluster, node testutil.ClusterNode, build testutil.ContainerdBuild) {
	ctx := context.Background()
	cfg := node.Local("/etc/containerd/config.toml")
	orig, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	section := `plugins."io.containerd.cri.v1.runtime".containerd.runtimes.demo2`
	if build.Major == 1 {
		section = `plugins."io.containerd.grpc.v1.cri".containerd.runtimes.demo2`
	}
	admins := string(orig) + "\n[" + section + "]\n  runtime_type = \"io.containerd.runc.v2\"\n"
	writeFile(t, cfg, admins)
	t.Cleanup(func() { writeFile(t, cfg, string(orig)) })

	srv := c.StartFileServer(t)
	a := testutil.NewShimArchive(t, "demo2", build.Binary("containerd-shim-runc-v2"), nil)
	url := srv.Add("/demo2.tar.gz", a.Data)
	demo2 := func() *v1alpha1.Shim {
		return &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "demo2"}, Spec: v1alpha1.ShimSpec{
			NodeSelector:  onNode(node),
			FetchStrategy: v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{Location: url, SHA256: a.SHA256}},
			RuntimeClass:  v1alpha1.RuntimeClassSpec{Name: "demo2", Handler: "demo2"},
		}}
	}
	first := demo2()
	start := time.Now()
	if err := c.Client.Create(ctx, first); err != nil {
		t.Fatal(err)
	}
	kubectl(t, c, "wait", "--for=condition=Stalled", "shim/demo2", "--timeout=120s")
	t.Logf("demo2 refused in %v", time.Since(start).Round(100*time.Millisecond))
	if err := c.Client.Get(ctx, client.ObjectKeyFromObject(first), first); err != nil {
		t.Fatal(err)
	}
	if f := first.Status.FailingNodes; len(f) != 1 || f[0].Reason != string(plan.ReasonConflict) {
		t.Fatalf("failing nodes %+v, want %s refused with Conflict", f, node.Name)
	}
	jobs := &batchv1.JobList{}
	if err := c.Client.List(ctx, jobs, client.InNamespace("shimkit-system"), client.MatchingLabels{"shim.containerd.x-k8s.io/shim": "demo2"}); err != nil {
		t.Fatal(err)
	}
	if len(jobs.Items) != 1 {
		t.Fatalf("%d Jobs for demo2, want 1", len(jobs.Items))
	}
	j := jobs.Items[0]
	var failed *batchv1.JobCondition
	for i := range j.Status.Conditions {
		if j.Status.Conditions[i].Type == batchv1.JobFailed {
			failed = &j.Status.Conditions[i]
		}
	}
	if j.Status.Failed != 1 || failed == nil || failed.Reason != batchv1.JobReasonPodFailurePolicy {
		t.Errorf("Job %s: %d pods failed, condition %+v; want one pod, ended by the podFailurePolicy", j.Name, j.Status.Failed, failed)
	}
	if data, _ := os.ReadFile(cfg); string(data) != admins {
		t.Errorf("the refused install changed the config:\n%s", data)
	}

	// The admin removes their handler, deletes the Shim, applies it again.
	writeFile(t, cfg, string(orig))
	if err := c.Client.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "demo2 deleted", func() bool {
		return apierrors.IsNotFound(c.Client.Get(ctx, client.ObjectKeyFromObject(first), &v1alpha1.Shim{}))
	})
	obj := &corev1.Node{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: node.Name}, obj); err != nil {
		t.Fatal(err)
	}
	if nodelabel.HasAny(obj, "demo2") {
		t.Errorf("the deleted demo2 left records on %s: %v", node.Name, obj.Annotations)
	}
	second := demo2()
	if err := c.Client.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	kubectl(t, c, "wait", "--for=condition=Ready", "shim/demo2", "--timeout=120s")
	assertLabelled(t, c, node.Name, "demo2", true)
	if err := c.Client.Delete(ctx, second); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 120*time.Second, "the new demo2 deleted", func() bool {
		return apierrors.IsNotFound(c.Client.Get(ctx, client.ObjectKeyFromObject(second), &v1alpha1.Shim{}))
	})
	if data, _ := os.ReadFile(cfg); string(data) != string(orig) || strings.Contains(string(data), "demo2") {
		t.Errorf("config after demo2's deletion:\n%s", data)
	}
}
