package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/shimkit/shimkit/internal/frontend/plugin"
	"github.com/shimkit/shimkit/internal/frontend/report"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// kubectlShimkit runs kubectl shimkit against the cluster and decodes its
// JSON output into out.
func kubectlShimkit(t *testing.T, c *testutil.Cluster, out any, args ...string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := plugin.Run(context.Background(), append(args, "--kubeconfig", c.Kubeconfig, "-o", "json"), genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &stdout, ErrOut: &stderr}); code != 0 {
		t.Fatalf("kubectl shimkit %v: exit %d: %s", args, code, stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("kubectl shimkit %v: %v\n%s", args, err, stdout.String())
	}
}

// shimkit runs kubectl shimkit against the cluster: its exit code, its
// output and its errors.
func shimkit(t *testing.T, c *testutil.Cluster, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := plugin.Run(context.Background(), append(args, "--kubeconfig", c.Kubeconfig), genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &stdout, ErrOut: &stderr})
	t.Logf("kubectl shimkit %v: exit %d\n%s%s", args, code, stderr.String(), stdout.String())
	return code, stdout.String(), stderr.String()
}

// shimFile writes the Shim as a file an admin would apply.
func shimFile(t *testing.T, s *v1alpha1.Shim) string {
	t.Helper()
	s.TypeMeta = metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Shim"}
	data, err := yaml.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), s.Name+".yaml")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// planChange is kubectl shimkit plan -f of the Shim with its spec changed
// by change (the file an admin would apply).
func planChange(t *testing.T, c *testutil.Cluster, name string, change func(*v1alpha1.Shim)) report.PlanReport {
	t.Helper()
	live := &v1alpha1.Shim{}
	if err := c.Client.Get(context.Background(), client.ObjectKey{Name: name}, live); err != nil {
		t.Fatal(err)
	}
	s := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: live.Spec}
	change(s)
	var p report.PlanReport
	kubectlShimkit(t, c, &p, "plan", "-f", shimFile(t, s))
	return p
}

// assertFirstJobs checks that the first install Jobs of the Shim created
// after since are on the nodes of the plan's first wave.
func assertFirstJobs(t *testing.T, c *testutil.Cluster, name string, since time.Time, p report.PlanReport) {
	t.Helper()
	if len(p.Waves) == 0 {
		t.Fatalf("plan of %s: no wave", name)
	}
	want := slices.Sorted(slices.Values(p.Waves[0].Targets()))
	var got []string
	waitFor(t, 60*time.Second, "the first Jobs of "+name+" after the change", func() bool {
		jobs := &batchv1.JobList{}
		if err := c.Client.List(context.Background(), jobs, client.InNamespace("shimkit-system"), client.MatchingLabels{jobview.LabelShim: jobview.LabelValue(name), jobview.LabelOp: jobview.OpInstall}); err != nil {
			return false
		}
		var fresh []batchv1.Job
		for _, j := range jobs.Items {
			if at, err := time.Parse(time.RFC3339Nano, j.Annotations[jobview.AnnotationCreated]); err == nil && at.After(since) {
				fresh = append(fresh, j)
			}
		}
		sort.Slice(fresh, func(a, b int) bool { return jobview.Newer(&fresh[b], &fresh[a]) })
		got = nil
		for i := 0; i < len(fresh) && i < len(want); i++ {
			got = append(got, jobview.NodeOf(&fresh[i]))
		}
		return len(got) == len(want)
	})
	slices.Sort(got)
	t.Logf("kubectl shimkit plan: first wave %v of %d; the operator's first Jobs after the change: %v", want, len(p.Waves), got)
	if !slices.Equal(got, want) {
		t.Errorf("the operator started %v first; the plan's first wave was %v", got, want)
	}
}
