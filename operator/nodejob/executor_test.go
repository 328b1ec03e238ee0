package nodejob_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/operator/nodejob"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testutil.RemoveInstallerBinary()
	os.Exit(code)
}

// demoPlan installs the shim archive at url on node: one handler, demo.
func demoPlan(shim, node, url, sha256 string) *plan.NodePlan {
	p := plan.New(plan.ShimRef{Name: shim, UID: "uid-" + shim}, plan.OpInstall)
	p.Node, p.SpecHash = node, "h1"
	p.Artifact = &plan.Artifact{Type: plan.SourceHTTP, URL: url, Digest: "sha256:" + sha256}
	p.Files = []plan.File{{Source: "containerd-shim-*", Path: "containerd-shim-" + shim + "-v2", Mode: 0o755}}
	p.Handlers = []plan.Handler{{Name: shim, RuntimeType: "io.containerd." + shim + ".v2", RuntimePath: plan.BundleDirPlaceholder + "/containerd-shim-" + shim + "-v2"}}
	return p
}

// TestExecutorRunsAPlan runs a plan with no Shim object on a real API
// server: the Job is created as the plan says, a second installer on the
// node waits (ErrNodeBusy), the real installer runs the Job's pod against
// the node's root, and Result reads its NodeResult back from the pod.
func TestExecutorRunsAPlan(t *testing.T) {
	env := testutil.StartEnv(t)
	ctx := context.Background()
	const ns = "runtimes"
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	cfg := filepath.Join(root, "etc/containerd/config.toml")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("version = 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	art := testutil.NewShimArchive(t, "demo", "/bin/true", nil)
	srv := testutil.StartFileServer(t)
	url := srv.Add("/demo.tar.gz", art.Data)

	e := nodejob.NewExecutor(env.Client, nodejob.Spec{Namespace: ns, Image: "shimkit-installer:test", BackoffLimit: 0})
	job, err := e.Start(ctx, demoPlan("demo", "n1", url, art.SHA256))
	if err != nil {
		t.Fatal(err)
	}
	if again, err := e.Start(ctx, demoPlan("demo", "n1", url, art.SHA256)); err != nil || again.UID != job.UID {
		t.Errorf("starting the same plan again = %v, %v; want its Job", again, err)
	}
	if _, err := e.Start(ctx, demoPlan("other", "n1", url, art.SHA256)); !errors.Is(err, nodejob.ErrNodeBusy) || !strings.Contains(err.Error(), "n1") {
		t.Errorf("a second installer on n1 = %v, want ErrNodeBusy naming the node", err)
	}
	if _, err := e.Result(ctx, job); !errors.Is(err, nodejob.ErrRunning) {
		t.Errorf("Result of a running Job = %v, want ErrRunning", err)
	}

	// What the kubelet and the Job controller do: run the pod (the real
	// installer, on the node's root), then end the Job.
	run := testutil.RealInstaller(t, func(*batchv1.Job) string { return root }, "--offline")(ctx, job)
	if err := testutil.CreateJobPod(ctx, env.Client, job, run); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
		t.Fatal(err)
	}
	testutil.EndJob(job, run.ExitCode)
	if err := env.Client.Status().Update(ctx, job); err != nil {
		t.Fatal(err)
	}

	res, err := e.Result(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != plan.Succeeded || res.Node != "n1" || res.Shim.Name != "demo" || res.Digest != "sha256:"+art.SHA256 {
		t.Errorf("result = %+v, want demo Succeeded on n1 at the archive's digest", res)
	}
	if data, _ := os.ReadFile(cfg); !strings.Contains(string(data), "io.containerd.demo.v2") {
		t.Errorf("the node's config has no demo handler:\n%s", data)
	}
	if _, err := e.Start(ctx, demoPlan("other", "n1", url, art.SHA256)); err != nil {
		t.Errorf("n1 is free again: %v", err)
	}
}

// TestExecutorResultWithoutPods: a Job that failed and whose pods are gone
// says why through its condition (ErrNoResult).
func TestExecutorResultWithoutPods(t *testing.T) {
	env := testutil.StartEnv(t)
	ctx := context.Background()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "runtimes"}}); err != nil {
		t.Fatal(err)
	}
	e := nodejob.NewExecutor(env.Client, nodejob.Spec{Namespace: "runtimes", Image: "shimkit-installer:test"})
	job, err := e.Start(ctx, demoPlan("demo", "n2", "http://artifacts.invalid/demo.tar.gz", strings.Repeat("0", 64)))
	if err != nil {
		t.Fatal(err)
	}
	testutil.EndJob(job, 1)
	if err := env.Client.Status().Update(ctx, job); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Result(ctx, job); !errors.Is(err, nodejob.ErrNoResult) || !strings.Contains(err.Error(), "BackoffLimitExceeded") {
		t.Errorf("Result = %v, want ErrNoResult with the Job's reason", err)
	}
}
