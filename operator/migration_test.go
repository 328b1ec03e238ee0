package operator_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// rcmFinalizer is the finalizer runtime-class-manager puts on its Shims.
const rcmFinalizer = "rcm.spinkube.dev/finalizer"

// startClusterWithRCM is startCluster with runtime-class-manager's CRDs
// (both groups) installed too.
func startClusterWithRCM(t testing.TB) *testutil.Env {
	t.Helper()
	env := testutil.StartEnvWith(t, func(e *envtest.Environment) {
		e.CRDInstallOptions.Paths = append(e.CRDInstallOptions.Paths, filepath.Join("testdata", "rcm", "crds"))
	}, v1alpha1.AddToScheme)
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: jobNamespace}}); err != nil {
		t.Fatal(err)
	}
	return env
}

// createRCMShim creates a runtime-class-manager Shim of
// testdata/rcm/shims with its finalizer, as its operator leaves it.
func createRCMShim(t testing.TB, c client.Client, file string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "rcm", "shims", file))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &u.Object); err != nil {
		t.Fatal(err)
	}
	u.SetFinalizers([]string{rcmFinalizer})
	if err := c.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	return u
}

// rcmRuntimeClass creates the RuntimeClass as runtime-class-manager does
// (createRuntimeClassManifest): a label of its name, the handler, its
// Shim's node selector, and its Shim as the controller
// (SetControllerReference: blockOwnerDeletion).
func rcmRuntimeClass(t testing.TB, c client.Client, name, handler string, selector map[string]string, owner *unstructured.Unstructured) *nodev1.RuntimeClass {
	t.Helper()
	rc := &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{name: "true"}, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: owner.GetAPIVersion(), Kind: owner.GetKind(), Name: owner.GetName(), UID: owner.GetUID(),
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}}},
		Handler:    handler,
		Scheduling: &nodev1.Scheduling{NodeSelector: selector},
	}
	if err := c.Create(context.Background(), rc); err != nil {
		t.Fatal(err)
	}
	return rc
}

// TestMigrationFromRCM takes a cluster over from runtime-class-manager, as
// the operator's ServiceAccount with only the shipped RBAC: nodes it
// provisioned (label spin-v2=provisioned), its RuntimeClass
// wasmtime-spin-v2 controlled by its Shim spin-v2. The shimkit Shim with
// migrateFrom takes the RuntimeClass over before any Job starts (same
// object, handler unchanged: pods never lose it), sends the provisioned
// nodes plans that migrate the handler and the others plain ones, and once
// a node is installed removes runtime-class-manager's label from it (and
// from no node it did not install). Deleting the old Shim then (its
// finalizer removed first, as documented) cannot delete the RuntimeClass:
// no owner reference names it any more.
func TestMigrationFromRCM(t *testing.T) {
	env := startClusterWithRCM(t)
	ctx := context.Background()
	for _, f := range []string{"service_account.yaml", "role.yaml", "role_binding.yaml", "leader_election_role.yaml"} {
		testutil.ApplyFile(t, env.Client, filepath.Join(testutil.RepoRoot(), "operator/config/rbac", f))
	}
	sa := rest.CopyConfig(env.Config)
	sa.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:shimkit-system:shimkit-operator"}

	// What runtime-class-manager left.
	old := createRCMShim(t, env.Client, "spin-v2.yaml")
	before := rcmRuntimeClass(t, env.Client, "wasmtime-spin-v2", "spin-v2", map[string]string{"spin": "true"}, old)
	provisioned := map[string]string{"spin": "true", "spin-v2": "provisioned"}
	createNode(t, env.Client, "rcm-amd64", with(provisioned, corev1.LabelArchStable, "amd64"), linuxNode("amd64"))
	createNode(t, env.Client, "rcm-arm64", with(provisioned, corev1.LabelArchStable, "arm64"), linuxNode("arm64"))
	createNode(t, env.Client, "rcm-failed", with(with(provisioned, "spin-v2", "failed"), corev1.LabelArchStable, "amd64"), linuxNode("amd64"))
	createNode(t, env.Client, "new", map[string]string{"spin": "true", corev1.LabelArchStable: "amd64"}, linuxNode("amd64"))
	// Provisioned once, no longer selected: shimkit leaves it alone.
	createNode(t, env.Client, "unselected", map[string]string{"spin-v2": "provisioned", corev1.LabelArchStable: "amd64"}, linuxNode("amd64"))

	// Whose the RuntimeClass is as each Job appears (a watch), and each
	// Job's plan (the kubelet).
	var mu sync.Mutex
	plans := map[string]*plan.NodePlan{}
	classOwners := map[string]string{}
	watchJobs(t, env, func(j *batchv1.Job) {
		rc := &nodev1.RuntimeClass{}
		owner := "?"
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "wasmtime-spin-v2"}, rc); err == nil {
			if ref := metav1.GetControllerOf(rc); ref != nil {
				owner = ref.APIVersion + " " + ref.Name
			}
		}
		mu.Lock()
		defer mu.Unlock()
		classOwners[j.Name] = owner
	})
	startKubelet(t, env, 100*time.Millisecond, func(j *batchv1.Job) bool {
		p, err := plan.Decode([]byte(j.Spec.Template.Annotations[operator.PlanAnnotation]))
		if err != nil {
			t.Errorf("Job %s: %v", j.Name, err)
			return true
		}
		mu.Lock()
		defer mu.Unlock()
		plans[p.Node] = p
		return false
	})
	startOperatorAs(t, env, sa)
	// The ServiceAccount may read the old Shim (for its UID).
	saClient, err := client.New(sa, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := saClient.Get(ctx, client.ObjectKeyFromObject(old), old.DeepCopy()); err != nil {
		t.Errorf("the operator cannot read runtime-class-manager's Shim: %v", err)
	}

	shim := readShim(t, "migrate")
	if err := env.Client.Create(ctx, shim); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the migrated Shim Ready", ready(env.Client, "spin-v2"))
	shim = getShim(t, env.Client, "spin-v2")

	// The RuntimeClass: the same object, the handler unchanged, now the
	// Shim's, and it was before the first Job.
	after := getRuntimeClass(t, env.Client, "wasmtime-spin-v2")
	if after.UID != before.UID || after.Handler != "spin-v2" {
		t.Errorf("not the RuntimeClass runtime-class-manager made: %+v", after)
	}
	if ref := metav1.GetControllerOf(after); ref == nil || ref.UID != shim.UID || ref.APIVersion != v1alpha1.GroupVersion.String() {
		t.Errorf("controller %+v, want the Shim %s", ref, shim.UID)
	}
	for _, ref := range after.OwnerReferences {
		if ref.UID == old.GetUID() || ref.Kind == "Shim" && ref.APIVersion == "runtime.spinkube.dev/v1alpha1" {
			t.Errorf("still owned by runtime-class-manager's Shim: %+v", after.OwnerReferences)
		}
	}
	if after.Labels["wasmtime-spin-v2"] != "true" || !maps.Equal(after.Scheduling.NodeSelector, map[string]string{nodelabel.Key("spin-v2"): nodelabel.Installed}) {
		t.Errorf("labels %v, scheduling %+v", after.Labels, after.Scheduling)
	}
	mu.Lock()
	if len(classOwners) != 4 {
		t.Errorf("saw Jobs %v, want 4", classOwners)
	}
	for job, owner := range classOwners {
		if owner != v1alpha1.GroupVersion.String()+" spin-v2" {
			t.Errorf("Job %s appeared while the RuntimeClass was %s's", job, owner)
		}
	}
	// The plans: migration where runtime-class-manager was (whatever its
	// label's value), a plain install elsewhere, nothing for the node
	// that is not selected.
	want := &plan.Migration{From: plan.FromRuntimeClassManager, Handler: "spin-v2"}
	for node, migrates := range map[string]bool{"rcm-amd64": true, "rcm-arm64": true, "rcm-failed": true, "new": false} {
		p := plans[node]
		switch {
		case p == nil:
			t.Errorf("node %s: no Job", node)
		case migrates && (p.Migrate == nil || *p.Migrate != *want):
			t.Errorf("node %s: Migrate %+v, want %+v", node, p.Migrate, want)
		case !migrates && p.Migrate != nil:
			t.Errorf("node %s: Migrate %+v, want none", node, p.Migrate)
		}
	}
	if plans["unselected"] != nil {
		t.Error("a Job for the unselected node")
	}
	mu.Unlock()

	// The nodes: shimkit's label, runtime-class-manager's gone, the
	// user's selector label kept; the unselected node untouched.
	for _, name := range []string{"rcm-amd64", "rcm-arm64", "rcm-failed", "new"} {
		n := getNode(t, env.Client, name)
		if ok, _ := nodelabel.State(n, "spin-v2"); !ok || n.Labels["spin"] != "true" {
			t.Errorf("node %s: labels %v", name, n.Labels)
		}
		if v, ok := n.Labels["spin-v2"]; ok {
			t.Errorf("node %s keeps runtime-class-manager's label spin-v2=%s", name, v)
		}
	}
	if n := getNode(t, env.Client, "unselected"); n.Labels["spin-v2"] != "provisioned" {
		t.Errorf("unselected node's labels changed: %v", n.Labels)
	}

	// Retire runtime-class-manager's Shim as documented: its finalizer
	// first (its operator is gone), then the Shim. The garbage collector
	// (not part of envtest) would find no owner reference to it on the
	// RuntimeClass.
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
	if err := env.Client.Patch(ctx, old, patch); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(old), old.DeepCopy()); !apierrors.IsNotFound(err) {
		t.Fatalf("runtime-class-manager's Shim not deleted: %v", err)
	}
	final := getRuntimeClass(t, env.Client, "wasmtime-spin-v2")
	for _, ref := range final.OwnerReferences {
		if ref.UID == old.GetUID() {
			t.Errorf("an owner reference to the deleted Shim: %+v", final.OwnerReferences)
		}
	}
	if final.UID != before.UID {
		t.Error("the RuntimeClass was replaced")
	}
	waitFor(t, 10*time.Second, "the Shim still Ready", ready(env.Client, "spin-v2"))
	// No Event contradicts the takeover (the cache's copy from before it
	// made a RuntimeClassConflict in 2 of 3 migrations).
	for _, e := range eventsOf(t, env.Client, "spin-v2") {
		if e.Reason == v1alpha1.ReasonRuntimeClassConflict {
			t.Errorf("Event %s %s after the takeover: %s", e.Type, e.Reason, e.Note)
		}
	}
}

// TestMigrationRuntimeClassConflicts: with migrateFrom, a RuntimeClass of
// the spec's name that runtime-class-manager's Shim does not control (an
// earlier Shim of that name, another handler, an admin's) is not taken
// over: RuntimeClassConflict says why, and the nodes are installed.
func TestMigrationRuntimeClassConflicts(t *testing.T) {
	env := startClusterWithRCM(t)
	ctx := context.Background()
	old := createRCMShim(t, env.Client, "spin-v2.yaml")
	earlier := old.DeepCopy()
	earlier.SetUID("uid-of-an-earlier-spin-v2")
	// Controlled by the Shim that spec.migrateFrom names, with another
	// handler; and by an earlier Shim of its name.
	rcmRuntimeClass(t, env.Client, "wasmtime-spin-v2", "spin", nil, old)
	rcmRuntimeClass(t, env.Client, "spin-earlier", "spin-v2", nil, earlier)
	createNodes(t, env.Client, 1, map[string]string{"spin": "true", "spin-v2": "provisioned"}, "n")
	startKubelet(t, env, 50*time.Millisecond, nil)
	startOperator(t, env)

	shim := readShim(t, "migrate")
	shim.Spec.Handlers = []v1alpha1.HandlerSpec{{RuntimeClass: v1alpha1.RuntimeClassSpec{Name: "spin-earlier", Handler: "spin-v3"}}}
	if err := env.Client.Create(ctx, shim); err != nil {
		t.Fatal(err)
	}
	var msg string
	waitFor(t, 30*time.Second, "RuntimeClassConflict for both", func() (bool, string) {
		s := getShim(t, env.Client, "spin-v2")
		c := condition(s, v1alpha1.ConditionDegraded)
		if c == nil {
			return false, "no Degraded"
		}
		msg = c.Message
		return c.Reason == v1alpha1.ReasonRuntimeClassConflict && s.Status.UpdatedNodes == 1, fmt.Sprintf("%+v", s.Status)
	})
	for _, part := range []string{
		"RuntimeClass wasmtime-spin-v2 (spec.runtimeClass.name) is not taken over from Shim.runtime.spinkube.dev spin-v2, which spec.migrateFrom names: its handler is spin, not spin-v2",
		"RuntimeClass spin-earlier (spec.handlers[0].runtimeClass.name) is not taken over from Shim.runtime.spinkube.dev spin-v2, which spec.migrateFrom names: its controller is Shim spin-v2 (UID uid-of-an-earlier-spin-v2), not that Shim of UID " + string(old.GetUID()),
	} {
		if !strings.Contains(msg, part) {
			t.Errorf("Degraded message lacks %q:\n%s", part, msg)
		}
	}
	for _, name := range []string{"wasmtime-spin-v2", "spin-earlier"} {
		rc := getRuntimeClass(t, env.Client, name)
		if ref := metav1.GetControllerOf(rc); ref == nil || ref.Kind != "Shim" || ref.APIVersion != "runtime.spinkube.dev/v1alpha1" {
			t.Errorf("RuntimeClass %s changed hands: %+v", name, rc.OwnerReferences)
		}
	}
}

// watchJobs calls seen for each Job of the Jobs' namespace as it appears.
func watchJobs(t testing.TB, env *testutil.Env, seen func(*batchv1.Job)) {
	t.Helper()
	c, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme, DefaultNamespaces: map[string]cache.Config{jobNamespace: {}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	inf, err := c.GetInformer(ctx, &batchv1.Job{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if j, ok := obj.(*batchv1.Job); ok {
			seen(j)
		}
	}}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = c.Start(ctx); close(done) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("job cache did not sync")
	}
	t.Cleanup(func() { cancel(); <-done })
}

func with(m map[string]string, k, v string) map[string]string {
	out := maps.Clone(m)
	out[k] = v
	return out
}

func getNode(t testing.TB, c client.Client, name string) *corev1.Node {
	t.Helper()
	n := &corev1.Node{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		t.Fatal(err)
	}
	return n
}
