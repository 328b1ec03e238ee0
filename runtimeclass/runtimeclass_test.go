package runtimeclass_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/runtimeclass"
)

// TestApplyUpdateDelete applies a RuntimeClass, changes the spec and
// applies again (it is updated, not only created), keeps what another
// manager added, and deletes it.
func TestApplyUpdateDelete(t *testing.T) {
	env := testutil.StartEnv(t)
	ctx := context.Background()
	spec := runtimeclass.Spec{
		Name: "wasmtime-spin", Handler: "spin",
		NodeSelector: map[string]string{nodelabel.Key("spin"): nodelabel.Installed},
	}
	if err := runtimeclass.Apply(ctx, env.Client, spec); err != nil {
		t.Fatal(err)
	}
	got := &nodev1.RuntimeClass{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "wasmtime-spin"}, got); err != nil {
		t.Fatal(err)
	}
	if got.Handler != "spin" || got.Scheduling.NodeSelector[nodelabel.Key("spin")] != "installed" || !runtimeclass.UpToDate(got, spec) {
		t.Fatalf("applied: %+v", got)
	}

	// Someone else labels it.
	got.Labels = map[string]string{"team": "wasm"}
	if err := env.Client.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	// The spec changes: tolerations for tainted wasm nodes.
	spec.Tolerations = []corev1.Toleration{{Key: "wasm", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	if runtimeclass.UpToDate(got, spec) {
		t.Error("UpToDate ignores tolerations")
	}
	if err := runtimeclass.Apply(ctx, env.Client, spec); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "wasmtime-spin"}, got); err != nil {
		t.Fatal(err)
	}
	if len(got.Scheduling.Tolerations) != 1 || got.Labels["team"] != "wasm" || !runtimeclass.UpToDate(got, spec) {
		t.Errorf("after update: %+v", got)
	}
	managers := map[string]bool{}
	for _, m := range got.ManagedFields {
		managers[m.Manager] = true
	}
	if !managers[runtimeclass.FieldOwner] {
		t.Errorf("field managers %v lack %s", managers, runtimeclass.FieldOwner)
	}

	if err := runtimeclass.Delete(ctx, env.Client, "wasmtime-spin"); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "wasmtime-spin"}, got); !apierrors.IsNotFound(err) {
		t.Errorf("still there: %v", err)
	}
	if err := runtimeclass.Delete(ctx, env.Client, "wasmtime-spin"); err != nil {
		t.Errorf("deleting twice: %v", err)
	}
}
