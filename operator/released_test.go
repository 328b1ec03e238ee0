package operator_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// laggingShims is the operator's client with a Shim cache that has not
// caught up with the release of a Shim: once the operator removed a
// deleted Shim's finalizer, Get still returns the Shim as it was before.
// (The Shim's Jobs, deleted by the garbage collector once the Shim is
// gone, come through another watch, which can be ahead.)
type laggingShims struct {
	client.Client
	mu     sync.Mutex
	stale  map[string]*v1alpha1.Shim
	served int
}

func (c *laggingShims) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	var before *v1alpha1.Shim
	if s, ok := obj.(*v1alpha1.Shim); ok && !s.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(s, operator.Finalizer) {
		before = s.DeepCopy()
		controllerutil.AddFinalizer(before, operator.Finalizer)
	}
	err := c.Client.Patch(ctx, obj, patch, opts...)
	if err == nil && before != nil {
		c.mu.Lock()
		c.stale[before.Name] = before
		c.mu.Unlock()
	}
	return err
}

func (c *laggingShims) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if s, ok := obj.(*v1alpha1.Shim); ok {
		c.mu.Lock()
		defer c.mu.Unlock()
		if st := c.stale[key.Name]; st != nil {
			c.served++
			st.DeepCopyInto(s)
			return nil
		}
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c *laggingShims) servedCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.served
}

// TestReleasedShimLeftAlone: a reconcile that reads a Shim the operator
// has already released (its finalizer removed) from a cache that lags,
// beside its Jobs' deletions, does nothing: a node's finished install Job,
// its uninstall Job gone first, would otherwise be recorded as installed
// again, then uninstalled for a Shim that is no more, its label left.
func TestReleasedShimLeftAlone(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	createNodes(t, env.Client, 1, nil, "n")
	startKubelet(t, env, 50*time.Millisecond, nil)
	lag := &laggingShims{stale: map[string]*v1alpha1.Shim{}}
	startOperatorThrough(t, env, env.Config, nil, func(c client.Client) client.Client { lag.Client = c; return lag })
	if err := env.Client.Create(ctx, newShim("spin", "spin", "1", nil)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "Ready", ready(env.Client, "spin"))
	if err := env.Client.Delete(ctx, getShim(t, env.Client, "spin")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the Shim released", func() (bool, string) {
		err := env.Client.Get(ctx, client.ObjectKey{Name: "spin"}, &v1alpha1.Shim{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})

	// The garbage collector deletes the uninstall Job first.
	var uninstall *batchv1.Job
	for _, j := range jobsOf(t, env.Client, "spin") {
		if j.Labels["shim.containerd.x-k8s.io/op"] == "uninstall" {
			uninstall = &j
		}
	}
	if uninstall == nil {
		t.Fatalf("no uninstall Job: %d Jobs", len(jobsOf(t, env.Client, "spin")))
	}
	served := lag.servedCount()
	if err := env.Client.Delete(ctx, uninstall, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "a reconcile of the stale Shim", func() (bool, string) {
		return lag.servedCount() > served, fmt.Sprint(lag.servedCount())
	})
	time.Sleep(2 * time.Second) // what that reconcile would write
	node := &corev1.Node{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "n-0000"}, node); err != nil {
		t.Fatal(err)
	}
	if v, ok := node.Labels[nodelabel.Key("spin")]; ok {
		t.Errorf("node labelled %s=%s after the release", nodelabel.Key("spin"), v)
	}
	for _, j := range jobsOf(t, env.Client, "spin") {
		if j.UID != uninstall.UID && j.Labels["shim.containerd.x-k8s.io/op"] == "uninstall" {
			t.Errorf("uninstall Job %s created after the release", j.Name)
		}
	}
}
