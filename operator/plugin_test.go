package operator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/frontend/plugin"
	"github.com/shimkit/shimkit/internal/frontend/report"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestPluginPlanIsWhatTheOperatorDoes: kubectl shimkit plan -f of a spec
// change names, as its first wave, the nodes the operator then starts
// first once the change is applied (the same decision, decide.Decide, on
// the same reads), writing nothing itself; kubectl shimkit status shows
// every node Current before and after.
func TestPluginPlanIsWhatTheOperatorDoes(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	kubeconfig := testutil.WriteKubeconfig(t, env.Config, filepath.Join(t.TempDir(), "kubeconfig"))
	createNodes(t, env.Client, 5, nil, "p")
	startKubelet(t, env, 300*time.Millisecond, nil)
	// As the chart deploys it, empty: the operator fills it in.
	if err := env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: jobNamespace, Name: "shimkit-operator-options"}}); err != nil {
		t.Fatal(err)
	}
	startOperator(t, env)
	if err := env.Client.Create(ctx, newShim("pl", "pl", "2", nil)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "v1 Ready", ready(env.Client, "pl"))
	if rows := pluginStatus(t, kubeconfig, "pl"); len(rows) != 5 || slices.ContainsFunc(rows, func(r report.NodeRow) bool { return r.State != report.StateCurrent }) {
		t.Fatalf("status before: %+v, want 5 nodes Current", rows)
	}

	bootPlanIsTheJobs(t, env, kubeconfig)

	v2 := getShim(t, env.Client, "pl")
	v2.Spec.FetchStrategy.AnonHTTP.Location = "https://artifacts.invalid/pl-v2.tar.gz"
	file := writeShimFile(t, &v1alpha1.Shim{Spec: v2.Spec, ObjectMeta: metav1.ObjectMeta{Name: "pl"}})
	noOperatorWarning(t, env, kubeconfig, file)
	publishedOptions(t, env, kubeconfig, file)
	var plan report.PlanReport
	runPlugin(t, &plan, kubeconfig, "plan", "-f", file, "-o", "json")
	if len(plan.Waves) != 3 || len(plan.Waves[0].Upgrade) != 2 {
		t.Fatalf("plan: %+v, want 3 waves of at most 2 (maxUpdate 2, 5 nodes)", plan)
	}
	if len(jobsOf(t, env.Client, "pl")) != 5 {
		t.Errorf("the plan started Jobs: %d", len(jobsOf(t, env.Client, "pl")))
	}
	if code, _, stderr := pluginRun(kubeconfig, "plan", "-f", file, "--detailed-exitcode"); code != plugin.ExitDetailedChanges {
		t.Errorf("plan -f of a change --detailed-exitcode: exit %d, %s; want %d", code, stderr, plugin.ExitDetailedChanges)
	}
	planSeveral(t, kubeconfig, file)

	updateShim(t, env.Client, "pl", func(s *v1alpha1.Shim) { s.Spec = v2.Spec })
	waitFor(t, 30*time.Second, "v2 Ready", ready(env.Client, "pl"))
	var v2Jobs []batchv1.Job
	for _, j := range jobsOf(t, env.Client, "pl") {
		if j.Labels[jobview.LabelSpecHash] == plan.Target {
			v2Jobs = append(v2Jobs, j)
		}
	}
	sort.Slice(v2Jobs, func(a, b int) bool { return jobview.Newer(&v2Jobs[b], &v2Jobs[a]) })
	if len(v2Jobs) != 5 {
		t.Fatalf("%d Jobs of the plan's target %s, want 5", len(v2Jobs), plan.Target)
	}
	first := []string{jobview.NodeOf(&v2Jobs[0]), jobview.NodeOf(&v2Jobs[1])}
	want := slices.Clone(plan.Waves[0].Upgrade)
	slices.Sort(first)
	slices.Sort(want)
	t.Logf("plan: first wave %v of %d; the operator started %v first", want, len(plan.Waves), first)
	if !slices.Equal(first, want) {
		t.Errorf("the operator started %v first, the plan's first wave was %v", first, want)
	}
	if rows := pluginStatus(t, kubeconfig, "pl"); len(rows) != 5 || slices.ContainsFunc(rows, func(r report.NodeRow) bool { return r.State != report.StateCurrent || r.Revision != plan.Target }) {
		t.Errorf("status after: %+v, want 5 nodes Current at %s", rows, plan.Target)
	}
	if code, out, stderr := pluginRun(kubeconfig, "plan", "pl", "--detailed-exitcode"); code != plugin.ExitOK {
		t.Errorf("plan of the rolled-out Shim --detailed-exitcode: exit %d, %s%s; want 0", code, out, stderr)
	}
	// A spec the API server refuses is no plan.
	bad := &v1alpha1.Shim{Spec: v2.Spec, ObjectMeta: metav1.ObjectMeta{Name: "pl"}}
	bad.Spec.RuntimeClass.Name = "Not_A_Name"
	if code, _, stderr := pluginRun(kubeconfig, "plan", "-f", writeShimFile(t, bad)); code != plugin.ExitFailed || !bytes.Contains(stderr, []byte("the API server refuses it")) {
		t.Errorf("plan of a refused spec: exit %d, %s", code, stderr)
	}
	planDeletion(t, env, kubeconfig)
}

// planDeletion: kubectl shimkit plan --delete of pl, with two pods of its
// RuntimeClass on p-1, one under a PodDisruptionBudget that allows no
// disruption, under deletePolicy Evict: p-1 waits for both pods and the
// budget is quoted, maxUpdate nodes are uninstalled at once and the rest
// after, the RuntimeClass last; deleted, the Shim then says it waits for
// p-1's pods, as planned.
func planDeletion(t *testing.T, env *testutil.Env, kubeconfig string) {
	ctx := context.Background()
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}
	workloadPod(t, env, "web-1", "p-0001", "pl-rc", running)
	workloadPod(t, env, "web-2", "p-0001", "pl-rc", running)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1"},
		Spec: policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web-1"}}}}
	if err := env.Client.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web-1"}, pod); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(pod.DeepCopy())
	pod.Labels = map[string]string{"app": "web-1"}
	if err := env.Client.Patch(ctx, pod, patch); err != nil {
		t.Fatal(err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}
	if err := env.Client.Status().Update(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	updateShim(t, env.Client, "pl", func(s *v1alpha1.Shim) { s.Spec.DeletePolicy = v1alpha1.DeleteEvict })
	waitFor(t, 30*time.Second, "Evict Ready", ready(env.Client, "pl"))

	var rp operator.RemovalPreview
	runPlugin(t, &rp, kubeconfig, "plan", "--delete", "pl", "-o", "json")
	t.Logf("plan --delete: %+v", rp)
	if len(rp.Waiting) != 1 || rp.Waiting[0].Node != "p-0001" || !slices.Equal(rp.Waiting[0].Pods, []string{"default/web-1", "default/web-2"}) || !rp.Evict ||
		len(rp.Waiting[0].Blocked) != 1 || rp.Waiting[0].Blocked[0].Pod != "default/web-1" || !strings.Contains(rp.Waiting[0].Blocked[0].Why, "PodDisruptionBudget default/web-1 allows no disruption") {
		t.Errorf("waiting: %+v, want p-1 waiting for default/web-1 (its budget quoted) and default/web-2", rp.Waiting)
	}
	if len(rp.Uninstall) != 2 || len(rp.Later) != 2 || slices.Contains(append(rp.Uninstall, rp.Later...), "p-0001") || !slices.Equal(rp.RuntimeClasses, []string{"pl-rc"}) {
		t.Errorf("plan --delete: uninstall %v, later %v, RuntimeClasses %v; want 2 and 2 of the other nodes, pl-rc last", rp.Uninstall, rp.Later, rp.RuntimeClasses)
	}
	code, text, _ := pluginRun(kubeconfig, "plan", "--delete", "pl")
	if code != 0 || !bytes.Contains(text, []byte("p-0001: 2 pods run with the shim: default/web-1, default/web-2; evicts them first")) {
		t.Errorf("plan --delete as text (exit %d):\n%s", code, text)
	}
	if err := env.Client.Delete(ctx, getShim(t, env.Client, "pl")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the deleted Shim waiting for p-1's pods", func() (bool, string) {
		s := &v1alpha1.Shim{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "pl"}, s); err != nil {
			return false, err.Error()
		}
		c := condition(s, v1alpha1.ConditionReady)
		return c != nil && c.Reason == v1alpha1.ReasonHandlerInUse && strings.Contains(c.Message, "node p-0001: default/web-1, default/web-2"), fmt.Sprintf("%+v", c)
	})
	// The fence is the RuntimeClass's: the node keeps the label its pods
	// were admitted with (a restarted kubelet re-checks it).
	waitFor(t, 30*time.Second, "pl-rc fenced", func() (bool, string) {
		rc := &nodev1.RuntimeClass{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "pl-rc"}, rc); err != nil || rc.Scheduling == nil {
			return false, fmt.Sprintf("%v %+v", err, rc.Scheduling)
		}
		return maps.Equal(rc.Scheduling.NodeSelector, map[string]string{nodelabel.Key("pl"): "fenced"}), fmt.Sprintf("%v", rc.Scheduling.NodeSelector)
	})
	n := &corev1.Node{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "p-0001"}, n); err != nil || n.Labels[nodelabel.Key("pl")] != nodelabel.Installed {
		t.Errorf("p-0001's label while its pods run: %q (%v), want %s", n.Labels[nodelabel.Key("pl")], err, nodelabel.Installed)
	}
}

func pluginStatus(t testing.TB, kubeconfig, name string) []report.NodeRow {
	t.Helper()
	var rep report.StatusReport
	runPlugin(t, &rep, kubeconfig, "status", name, "-o", "json")
	return rep.Nodes
}

func runPlugin(t testing.TB, into any, kubeconfig string, args ...string) {
	t.Helper()
	code, stdout, stderr := pluginRun(kubeconfig, args...)
	if code != 0 {
		t.Fatalf("kubectl shimkit %v: exit %d: %s", args, code, stderr)
	}
	if err := json.Unmarshal(stdout, into); err != nil {
		t.Fatalf("kubectl shimkit %v: %v\n%s", args, err, stdout)
	}
}

func pluginRun(kubeconfig string, args ...string) (int, []byte, []byte) {
	var stdout, stderr bytes.Buffer
	code := plugin.Run(context.Background(), append(args, "--kubeconfig", kubeconfig), genericiooptions.IOStreams{In: strings.NewReader(""), Out: &stdout, ErrOut: &stderr})
	return code, stdout.Bytes(), stderr.Bytes()
}

func writeShimFile(t testing.TB, s *v1alpha1.Shim) string {
	t.Helper()
	s.APIVersion, s.Kind = v1alpha1.GroupVersion.String(), "Shim"
	data, err := yaml.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "shim.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// BenchmarkPluginPlan5000Nodes: kubectl shimkit plan of a spec change
// against 5,000 nodes on envtest, each with the Shim's label at the old
// spec and its install Job: one run reads the Shim, the nodes, the Jobs
// and the RuntimeClasses and decides every wave (maxUpdate 10%: 10
// waves). BENCHMARKS.md keeps the figure (target: 2 s).
//
//	go test ./operator -run '^$' -bench PluginPlan5000Nodes -benchtime 5x
func BenchmarkPluginPlan5000Nodes(b *testing.B) {
	env := startCluster(b)
	ctx := context.Background()
	kubeconfig := testutil.WriteKubeconfig(b, env.Config, filepath.Join(b.TempDir(), "kubeconfig"))
	shim := newShim("big", "big", "10%", nil)
	if err := env.Client.Create(ctx, shim); err != nil {
		b.Fatal(err)
	}
	createNodes(b, env.Client, 5000, map[string]string{"shim.containerd.x-k8s.io/big": "installed"}, "b")
	changed := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "big"}, Spec: shim.Spec}
	changed.Spec.FetchStrategy.AnonHTTP.Location = "https://artifacts.invalid/big-v2.tar.gz"
	file := writeShimFile(b, changed)
	b.ResetTimer()
	for range b.N {
		var plan report.PlanReport
		runPlugin(b, &plan, kubeconfig, "plan", "-f", file, "-o", "json")
		if len(plan.Waves) != 10 {
			b.Fatalf("%d waves, want 10", len(plan.Waves))
		}
	}
}

// noOperatorWarning: with no operator pod and no fresh leader Lease in
// its namespace (the operator here runs in the test, without leader
// election), plan warns that nothing carries it out; once a leader
// renews the Lease, it does not.
func noOperatorWarning(t *testing.T, env *testutil.Env, kubeconfig, file string) {
	t.Helper()
	const warning = "warning: no shimkit operator runs in namespace shimkit-system"
	if code, _, stderr := pluginRun(kubeconfig, "plan", "-f", file); code != plugin.ExitOK || !bytes.Contains(stderr, []byte(warning)) {
		t.Errorf("plan without an operator in its namespace: exit %d, stderr %q; want the warning", code, stderr)
	}
	if code, _, stderr := pluginRun(kubeconfig, "status", "pl"); code != plugin.ExitOK || !bytes.Contains(stderr, []byte(warning)) || !bytes.Contains(stderr, []byte("as an operator last wrote it")) {
		t.Errorf("status without an operator in its namespace: exit %d, stderr %q; want the warning", code, stderr)
	}
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: jobNamespace, Name: "shimkit-operator.containerd.x-k8s.io"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("operator-0"), LeaseDurationSeconds: ptr.To[int32](15), RenewTime: &now}}
	if err := env.Client.Create(context.Background(), lease); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"plan", "-f", file}, {"status", "pl"}} {
		if code, _, stderr := pluginRun(kubeconfig, args...); code != plugin.ExitOK || bytes.Contains(stderr, []byte(warning)) {
			t.Errorf("%v with a fresh leader Lease: exit %d, stderr %q; want no warning", args, code, stderr)
		}
	}
}

// publishedOptions: the running operator published the options it plans
// with, its defaults and the API server's version filled in, and a plan
// uses them without a warning; with none published, a plan says it used
// the defaults.
func publishedOptions(t *testing.T, env *testutil.Env, kubeconfig, file string) {
	t.Helper()
	ctx := context.Background()
	const warning = "planned with the defaults"
	cm := &corev1.ConfigMap{}
	waitFor(t, 10*time.Second, "the operator's options published", func() (bool, string) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: jobNamespace, Name: "shimkit-operator-options"}, cm)
		return err == nil && cm.Data["options.json"] != "", fmt.Sprint(err, cm.Data)
	})
	var got map[string]any
	if err := json.Unmarshal([]byte(cm.Data["options.json"]), &got); err != nil {
		t.Fatal(err)
	}
	if got["installerImage"] != "shimkit-installer:test" || got["namespace"] != jobNamespace || got["serverVersion"] == nil || got["batchWindow"] != float64(500*time.Millisecond) {
		t.Errorf("published options %v, want the operator's (installer image, namespace, the API server's version, batch window 500ms)", got)
	}
	if code, _, stderr := pluginRun(kubeconfig, "plan", "-f", file); code != plugin.ExitOK || bytes.Contains(stderr, []byte(warning)) {
		t.Errorf("plan beside the operator: exit %d, stderr %q; want no warning", code, stderr)
	}
	saved := cm.DeepCopy()
	if err := env.Client.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := pluginRun(kubeconfig, "plan", "-f", file); code != plugin.ExitOK || !bytes.Contains(stderr, []byte(warning)) {
		t.Errorf("plan with no options published: exit %d, stderr %q; want the warning", code, stderr)
	}
	saved.ResourceVersion, saved.UID = "", ""
	if err := env.Client.Create(ctx, saved); err != nil {
		t.Fatal(err)
	}
}

// bootPlanIsTheJobs: kubectl shimkit boot-plan for a pool of nodes like
// p-0000 prints the plan the operator's Job gave p-0000, naming no node
// and running no canary; a Shim not found, labels no Shim selects and a
// runtime it does not know are refused.
func bootPlanIsTheJobs(t *testing.T, env *testutil.Env, kubeconfig string) {
	t.Helper()
	code, stdout, stderr := pluginRun(kubeconfig, "boot-plan", "--labels", "kubernetes.io/arch=amd64", "--runtime", "containerd")
	if code != plugin.ExitOK {
		t.Fatalf("boot-plan: exit %d: %s", code, stderr)
	}
	got, err := plan.DecodePlans(stdout)
	if err != nil || len(got) != 1 {
		t.Fatalf("boot-plan printed %d plans (%v):\n%s", len(got), err, stdout)
	}
	var job *batchv1.Job
	for _, j := range jobsOf(t, env.Client, "pl") {
		if jobview.NodeOf(&j) == "p-0000" {
			job = &j
		}
	}
	if job == nil {
		t.Fatal("no Job of pl on p-0000")
	}
	want, err := plan.DecodePlans([]byte(job.Spec.Template.Annotations[operator.PlanAnnotation]))
	if err != nil {
		t.Fatal(err)
	}
	want[0].Node, want[0].Canary, want[0].Runtime = "", nil, plan.RuntimeContainerd
	if !reflect.DeepEqual(got[0], want[0]) {
		t.Errorf("boot-plan:\n%s\nwant the plan of the Job on p-0000, without node and canary:\n%+v", stdout, want[0])
	}
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"boot-plan", "nope"}, plugin.ExitFailed, "Shim nope not found"},
		{[]string{"boot-plan", "--labels", "kubernetes.io/arch=amd64,node-role.kubernetes.io/control-plane="}, plugin.ExitFailed, "no Shim selects a node with the labels"},
		{[]string{"boot-plan", "--runtime", "docker"}, plugin.ExitUsage, `--runtime "docker"`},
	} {
		if code, _, stderr := pluginRun(kubeconfig, tt.args...); code != tt.code || !bytes.Contains(stderr, []byte(tt.want)) {
			t.Errorf("%v: exit %d, %s; want %d saying %q", tt.args, code, stderr, tt.code, tt.want)
		}
	}
}

// planSeveral: plan -f of a file of two Shims (pl's change and a new one)
// plans both, as a List for -o json; a file with a Deployment is refused,
// naming it, before anything is planned.
func planSeveral(t *testing.T, kubeconfig, file string) {
	t.Helper()
	one, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	other := writeShimFile(t, newShim("other", "other", "1", nil))
	two, err := os.ReadFile(other)
	if err != nil {
		t.Fatal(err)
	}
	both := filepath.Join(t.TempDir(), "both.yaml")
	if err := os.WriteFile(both, slices.Concat(one, []byte("---\n"), two), 0o600); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Kind  string
		Items []struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Shim       string `json:"shim"`
		}
	}
	runPlugin(t, &list, kubeconfig, "plan", "-f", both, "-o", "json")
	if list.Kind != "List" || len(list.Items) != 2 || list.Items[0].Shim != "pl" || list.Items[1].Shim != "other" || list.Items[1].Kind != "ShimPlan" || list.Items[1].APIVersion != "kubectl.shimkit.dev/v1alpha1" {
		t.Errorf("plan -f of two Shims: %+v; want a List of the ShimPlans of pl and other", list)
	}
	deploy := filepath.Join(t.TempDir(), "deploy.yaml")
	if err := os.WriteFile(deploy, slices.Concat(one, []byte("---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := pluginRun(kubeconfig, "plan", "-f", deploy); code != plugin.ExitFailed || len(out) != 0 || !bytes.Contains(stderr, []byte("(document 2): apps/v1 Deployment web is not a Shim")) {
		t.Errorf("plan -f with a Deployment: exit %d, %s%s", code, out, stderr)
	}
}
