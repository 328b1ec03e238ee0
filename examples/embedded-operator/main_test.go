package main

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestEmbeddedReconcilerRuns starts the example against a real API server
// and sees the Shim reconciler act: finalizer, status, and a Job for the
// node.
func TestEmbeddedReconcilerRuns(t *testing.T) {
	env := testutil.StartEnv(t, v1alpha1.AddToScheme)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := env.Client
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "spinkube-system"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker"}}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- run(ctx, env.Config, "shimkit-installer:test", "spinkube-system", "0") }()

	shim := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "spin"}, Spec: v1alpha1.ShimSpec{
		FetchStrategy: v1alpha1.FetchStrategy{Type: v1alpha1.FetchOCI, OCI: &v1alpha1.OCIFetch{Reference: "registry.invalid/shims/spin@sha256:" + strings.Repeat("5", 64)}},
		RuntimeClass:  v1alpha1.RuntimeClassSpec{Name: "wasmtime-spin", Handler: "spin"},
	}}
	if err := c.Create(ctx, shim); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := &v1alpha1.Shim{}
		_ = c.Get(ctx, client.ObjectKey{Name: "spin"}, got)
		if len(got.Finalizers) == 1 && got.Finalizers[0] == operator.Finalizer && got.Status.ObservedGeneration == 1 && got.Status.InProgressNodes == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the embedded reconciler did not act: %+v", got.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("manager: %v", err)
	}
}
