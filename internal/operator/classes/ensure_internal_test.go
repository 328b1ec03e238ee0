package classes

import (
	"context"
	"strings"
	"testing"

	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/phase"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/runtimeclass"
)

// staleCache answers reads of RuntimeClasses with the copy it was given
// (what an informer holds before the watch event of the operator's own
// write arrives); writes and other reads go to the API server.
type staleCache struct {
	client.Client
	old *nodev1.RuntimeClass
}

func (s staleCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if rc, ok := obj.(*nodev1.RuntimeClass); ok && key.Name == s.old.Name {
		s.old.DeepCopyInto(rc)
		return nil
	}
	return s.Client.Get(ctx, key, obj, opts...)
}

// TestEnsureAfterTakeoverWithStaleCache: right after the operator took a
// RuntimeClass over from runtime-class-manager's Shim, its cache may still
// hold the predecessor's copy. The RuntimeClass is the Shim's on the API
// server: it is published, and no RuntimeClassConflict Event says
// otherwise (the Warning appeared in 2 of 3 migrations when the cache was
// believed).
func TestEnsureAfterTakeoverWithStaleCache(t *testing.T) {
	env := testutil.StartEnv(t, v1alpha1.AddToScheme)
	ctx := context.Background()
	shim := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "spin-v2", UID: types.UID("11111111-2222-3333-4444-555555555555")},
		Spec: v1alpha1.ShimSpec{RuntimeClass: v1alpha1.RuntimeClassSpec{Name: "wasmtime-spin-v2", Handler: "spin-v2"}}}
	spec := shimspec.Classes(shim)[0]

	// runtime-class-manager's RuntimeClass, as the cache still has it.
	pred := runtimeclass.Predecessor{Group: "runtime.spinkube.dev", Kind: "Shim", Name: "spin-v2", UID: "99999999-8888-7777-6666-555555555555"}
	old := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: spec.Name, OwnerReferences: []metav1.OwnerReference{{
		APIVersion: pred.Group + "/v1alpha1", Kind: pred.Kind, Name: pred.Name, UID: pred.UID, Controller: new(true),
	}}}, Handler: spec.Handler}
	if err := env.Client.Create(ctx, old); err != nil {
		t.Fatal(err)
	}
	if res, err := runtimeclass.Takeover(ctx, env.Client, spec.Spec, pred); err != nil || res != runtimeclass.TakenOver {
		t.Fatalf("takeover: %v %v", res, err)
	}

	rec := events.NewFakeRecorder(10)
	r := New(staleCache{Client: env.Client, old: old}, env.Client, phase.NewRecorder(rec, nil))
	classes, err := r.Read(ctx, shim)
	if err != nil {
		t.Fatal(err)
	}
	plan := decide.Classes(&decide.Snapshot{Shim: shim, Classes: classes}, false)
	conflict, err := r.Publish(ctx, shim, classes.Clone(), plan)
	if err != nil || conflict || !plan.Published || len(plan.Conflicts) > 0 {
		t.Errorf("Publish = %v, %v, %q, %v; want published, no conflict", conflict, plan.Published, plan.Conflicts, err)
	}
	close(rec.Events)
	for e := range rec.Events {
		if strings.Contains(e, v1alpha1.ReasonRuntimeClassConflict) {
			t.Errorf("Event contradicting the takeover: %s", e)
		}
	}

	// A RuntimeClass that is someone else's on the API server is still a
	// conflict, with its Event.
	other := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "admins"}, Handler: "spin-v2"}
	if err := env.Client.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	shim.Spec.RuntimeClass.Name, spec.Name = "admins", "admins"
	rec = events.NewFakeRecorder(10)
	r.recorder = phase.NewRecorder(rec, nil)
	if classes, err = r.Read(ctx, shim); err != nil {
		t.Fatal(err)
	}
	plan = decide.Classes(&decide.Snapshot{Shim: shim, Classes: classes}, false)
	if _, err := r.Publish(ctx, shim, classes.Clone(), plan); err != nil || plan.Published || len(plan.Conflicts) == 0 {
		t.Errorf("Publish of the admin's = %v, %q, %v; want a conflict", plan.Published, plan.Conflicts, err)
	}
	close(rec.Events)
	conflicts := 0
	for e := range rec.Events {
		if strings.Contains(e, v1alpha1.ReasonRuntimeClassConflict) {
			conflicts++
		}
	}
	if conflicts != 1 {
		t.Errorf("%d conflict Events for the admin's RuntimeClass, want 1", conflicts)
	}
}
