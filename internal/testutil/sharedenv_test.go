package testutil_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/testutil"
)

// TestSharedEnvResets proves a test of a shared control plane finds what
// Prepare made and nothing an earlier test left: its objects, those with
// finalizers and a namespace with objects in it included.
func TestSharedEnvResets(t *testing.T) {
	shared := &testutil.SharedEnv{Prepare: func(ctx context.Context, c client.Client) error {
		return c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kept"}})
	}}
	t.Cleanup(func() {
		if err := shared.Stop(); err != nil {
			t.Error(err)
		}
	})
	ctx := context.Background()
	left := []client.Object{
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Finalizers: []string{"example.com/held"}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "kept", Finalizers: []string{"example.com/held"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gone"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "gone"}},
	}
	var first *testutil.Env
	t.Run("leaves objects", func(t *testing.T) {
		first = shared.Env(t)
		for _, o := range left {
			if err := first.Client.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("finds none", func(t *testing.T) {
		env := shared.Env(t)
		if env != first {
			t.Fatal("a second control plane was started")
		}
		for _, o := range left {
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(o), o)
			if !apierrors.IsNotFound(err) {
				t.Errorf("%T %s: got %v, want it gone", o, client.ObjectKeyFromObject(o), err)
			}
		}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "kept"}, &corev1.Namespace{}); err != nil {
			t.Errorf("Prepare's namespace: %v", err)
		}
		// The namespace deleted is free for a new one of the same name.
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gone"}}); err != nil {
			t.Error(err)
		}
	})
}
