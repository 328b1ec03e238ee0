package operator

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/nodelabel/record"
	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/internal/operator/workload"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// objectWorld is a cluster as objects: what a reconcile and kubectl shimkit
// plan both read.
type objectWorld struct {
	shim  *v1alpha1.Shim
	nodes []*corev1.Node
	jobs  []*batchv1.Job
}

// sameWorldOptions are the options both sides run with.
var sameWorldOptions = Options{InstallerImage: "installer:test", Namespace: "shimkit-system"}

// fakeWorld is a fake API server holding the world.
func fakeWorld(t *testing.T, w objectWorld) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&v1alpha1.Shim{}).WithObjects(w.shim.DeepCopy()).
		WithIndex(&corev1.Pod{}, workload.PodRuntimeClassField, func(o client.Object) []string {
			return []string{ptr.Deref(o.(*corev1.Pod).Spec.RuntimeClassName, "")}
		}).
		WithIndex(&corev1.Pod{}, workload.PodNodeField, func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} })
	for _, n := range w.nodes {
		b = b.WithObjects(n.DeepCopy())
	}
	for _, j := range w.jobs {
		b = b.WithObjects(j.DeepCopy())
	}
	return b.Build()
}

// reconcileStarts runs one reconcile of the world's Shim on a fake API
// server holding the world, and returns the nodes it started an install
// Job on.
func reconcileStarts(t *testing.T, w objectWorld) []string {
	t.Helper()
	return reconcileStartsWith(t, w, sameWorldOptions)
}

// reconcileStartsWith is reconcileStarts with the operator's options.
func reconcileStartsWith(t *testing.T, w objectWorld, opts Options) []string {
	t.Helper()
	c := fakeWorld(t, w)
	r, err := New(c, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w.shim)}); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	var jobs batchv1.JobList
	if err := c.List(context.Background(), &jobs); err != nil {
		t.Fatal(err)
	}
	var started []string
	for i := range jobs.Items {
		j := &jobs.Items[i]
		// A Job of the world is not started by the reconcile; one of the
		// same name (a retried node's, the old deleted) is.
		if slices.ContainsFunc(w.jobs, func(o *batchv1.Job) bool { return o.Name == j.Name && o.UID == j.UID }) || j.Labels[jobview.LabelOp] != jobview.OpInstall {
			continue
		}
		started = append(started, jobview.NodeOf(j))
	}
	slices.Sort(started)
	return started
}

// planStarts is the first wave kubectl shimkit plan shows for the world.
func planStarts(t *testing.T, w objectWorld) []string {
	t.Helper()
	p, err := PreviewRollout(w.shim, w.nodes, w.jobs, func(*batchv1.Job) *plan.NodeResult { return nil }, []nodev1.RuntimeClass(nil), sameWorldOptions, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	first := slices.Clone(p.StartNow)
	slices.Sort(first)
	return first
}

// retryWorld: Shim r (maxUpdate 1) on nodes a, b and c; the operator
// acted on the retry annotation "a" at the current target (the status
// says so); b's install failed, which halts the rollout. failedAgain: a
// failed again since.
func retryWorld(t *testing.T, failedAgain bool) objectWorld {
	t.Helper()
	one := intstr.FromInt32(1)
	shim := &v1alpha1.Shim{
		ObjectMeta: metav1.ObjectMeta{Name: "r", UID: "r-uid", Finalizers: []string{Finalizer},
			Annotations: map[string]string{v1alpha1.RetryAnnotation: "a"}},
		Spec: v1alpha1.ShimSpec{
			FetchStrategy: v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{
				Location: "https://artifacts.invalid/r.tar.gz", SHA256: strings.Repeat("a", 64)}},
			RuntimeClass:    v1alpha1.RuntimeClassSpec{Name: "r-rc", Handler: "r"},
			RolloutStrategy: &v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutRolling, Rolling: &v1alpha1.RollingUpdate{MaxUpdate: &one}},
		},
	}
	obs := decide.NewSnapshot(shim, sameWorldOptions.withDefaults().settings(), time.Now(), time.Now())
	obs.Aim(shimspec.PinOf(shim, obs.SpecHash))
	shim.Status.SpecHash, shim.Status.Retried, shim.Status.RetriedSpecHash = obs.Hash, "a", obs.Hash
	w := objectWorld{shim: shim}
	for _, name := range []string{"a", "b", "c"} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if name == "b" || name == "a" && failedAgain {
			failed(t, n, shim, obs.Hash)
		}
		w.nodes = append(w.nodes, n)
	}
	return w
}

// failed records a failed install of the Shim's target on the node, as the
// operator writes it (its Job is gone: garbage collected).
func failed(t *testing.T, n *corev1.Node, shim *v1alpha1.Shim, hash string) {
	t.Helper()
	f := record.Failure{ShimUID: shim.UID, Op: jobview.OpInstall, SpecHash: hash, Reason: string(plan.ReasonRestartFailed), Job: "old-" + n.Name, Time: time.Now().UTC().Truncate(time.Second)}
	data, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	n.Annotations = map[string]string{record.FailureKey(shim.Name): string(data)}
}

// TestPlanSeesTheRetryTheOperatorActedOn: kubectl shimkit plan and a
// reconcile read the retry the operator acted on from the Shim's status,
// so that they start the same nodes: a node the retry named that failed
// again holds the rollout for both (plan used to take the annotation for
// a new request and start it), and a node the retry cleared starts for
// both, an operator restarted since included (it used to hold it).
func TestPlanSeesTheRetryTheOperatorActedOn(t *testing.T) {
	for _, tc := range []struct {
		name        string
		failedAgain bool
		want        []string
	}{
		{"the retried node failed again", true, nil},
		{"the retried node is cleared", false, []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := retryWorld(t, tc.failedAgain)
			got, planned := reconcileStarts(t, w), planStarts(t, w)
			if !slices.Equal(got, tc.want) || !slices.Equal(planned, tc.want) {
				t.Errorf("the reconcile started %v, plan's first wave is %v; want %v for both", got, planned, tc.want)
			}
		})
	}
}

// finishedWorld: the retry world, where b's Job of the target succeeded
// and c's failed since (their results unread).
func finishedWorld(t *testing.T) objectWorld {
	t.Helper()
	w := retryWorld(t, false)
	w.nodes[1].Annotations = nil
	for i, failed := range map[int]bool{1: false, 2: true} {
		j, err := InstallJob(w.shim, w.nodes[i], sameWorldOptions)
		if err != nil {
			t.Fatal(err)
		}
		j.UID = types.UID("job-" + w.nodes[i].Name)
		cond := batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}
		if failed {
			cond = batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded"}
		}
		start := metav1.NewTime(time.Now().Add(-time.Minute))
		j.Status = batchv1.JobStatus{StartTime: &start, Conditions: []batchv1.JobCondition{cond}}
		w.jobs = append(w.jobs, j)
	}
	return w
}

// TestSnapshotUnchangedByPlanningAndActing: a reconcile's snapshot is
// the same value, deep, before and after its plan is made and carried
// out (Jobs started and recorded, a retry's nodes, a removal), the
// objects it read included: the core decides on copies, and carrying out
// keeps what it needs of its own (acting).
func TestSnapshotUnchangedByPlanningAndActing(t *testing.T) {
	deleted := retryWorld(t, false)
	now := metav1.Now()
	deleted.shim.DeletionTimestamp = &now
	for _, n := range deleted.nodes {
		n.Labels = map[string]string{record.Key(deleted.shim.Name): record.Installed}
	}
	for _, tc := range []struct {
		name string
		w    objectWorld
	}{
		{"a retried node starts", retryWorld(t, false)},
		{"a new retry request", func() objectWorld {
			w := retryWorld(t, true)
			w.shim.Annotations[v1alpha1.RetryAnnotation] = "a@2"
			return w
		}()},
		{"finished Jobs are recorded", finishedWorld(t)},
		{"a deleted Shim is removed", deleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c := fakeWorld(t, tc.w)
			r, err := New(c, nil, sameWorldOptions)
			if err != nil {
				t.Fatal(err)
			}
			shim := &v1alpha1.Shim{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(tc.w.shim), shim); err != nil {
				t.Fatal(err)
			}
			obs, err := r.observe(ctx, shim)
			if err != nil {
				t.Fatal(err)
			}
			before := testutil.DeepCopy(obs)
			if _, err := r.planAndAct(ctx, obs); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(before, obs, cmp.Exporter(func(reflect.Type) bool { return true })); d != "" {
				t.Errorf("the snapshot changed (-before +after):\n%s", d)
			}
			var jobs batchv1.JobList
			if err := c.List(ctx, &jobs); err != nil {
				t.Fatal(err)
			}
			if len(jobs.Items) == len(tc.w.jobs) && equalStatus(t, c, tc.w.shim) {
				t.Errorf("the reconcile neither started a Job nor wrote the status: nothing was carried out")
			}
		})
	}
}

// equalStatus: the Shim's status is as the world had it.
func equalStatus(t *testing.T, c client.Client, shim *v1alpha1.Shim) bool {
	t.Helper()
	got := &v1alpha1.Shim{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(shim), got); err != nil {
		t.Fatal(err)
	}
	return cmp.Equal(got.Status, shim.Status)
}
