package operator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestRuntimeClassOwnership: a RuntimeClass that an admin created under a
// name the Shim's spec gives is never changed, adopted or deleted: the
// Shim is Degraded (RuntimeClassConflict, naming the RuntimeClass and the
// field), its other RuntimeClasses and nodes go ahead, and once the admin's
// RuntimeClass goes, the Shim publishes its own. Deleting the Shim deletes
// only its own RuntimeClasses.
func TestRuntimeClassOwnership(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	for _, name := range []string{"admin-primary", "admin-extra"} {
		rc := &nodev1.RuntimeClass{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"team": "platform"}},
			Handler:    "their-handler",
			Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"pool": "theirs"}},
		}
		if err := env.Client.Create(ctx, rc); err != nil {
			t.Fatal(err)
		}
	}
	adminBefore := getRuntimeClass(t, env.Client, "admin-primary")

	createNodes(t, env.Client, 2, nil, "n")
	startKubelet(t, env, 50*time.Millisecond, nil)
	startOperator(t, env)
	shim := newShim("rcown", "rcown", "2", nil)
	shim.Spec.RuntimeClass.Name = "admin-primary"
	shim.Spec.Handlers = []v1alpha1.HandlerSpec{
		{RuntimeClass: v1alpha1.RuntimeClassSpec{Name: "spin-extra", Handler: "spin-extra"}},
		{RuntimeClass: v1alpha1.RuntimeClassSpec{Name: "admin-extra", Handler: "spin-other"}},
	}
	if err := env.Client.Create(ctx, shim); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "Degraded by the admin's RuntimeClasses", func() (bool, string) {
		s := getShim(t, env.Client, "rcown")
		c := condition(s, v1alpha1.ConditionDegraded)
		return c != nil && c.Reason == v1alpha1.ReasonRuntimeClassConflict && s.Status.UpdatedNodes == 2, fmt.Sprintf("%+v", s.Status)
	})
	s := getShim(t, env.Client, "rcown")
	for _, c := range []*metav1.Condition{condition(s, v1alpha1.ConditionDegraded), condition(s, v1alpha1.ConditionReady)} {
		for _, part := range []string{"RuntimeClass admin-primary (spec.runtimeClass.name)", "RuntimeClass admin-extra (spec.handlers[1].runtimeClass.name)", "does not belong to this Shim"} {
			if !strings.Contains(c.Message, part) {
				t.Errorf("%s does not say %q: %s", c.Type, part, c.Message)
			}
		}
	}
	if c := condition(s, v1alpha1.ConditionReady); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonRuntimeClassConflict {
		t.Errorf("Ready %+v", c)
	}
	if rc := getRuntimeClass(t, env.Client, "spin-extra"); !metav1.IsControlledBy(rc, s) {
		t.Errorf("spin-extra not published by the Shim: %+v", rc.OwnerReferences)
	}
	time.Sleep(3 * time.Second) // a resync or two
	if after := getRuntimeClass(t, env.Client, "admin-primary"); !equality.Semantic.DeepEqual(after, adminBefore) {
		t.Errorf("the admin's RuntimeClass changed:\nbefore %+v\n after %+v", adminBefore, after)
	}

	// The admin's extra RuntimeClass goes: the Shim publishes its own at
	// once (the RuntimeClass watch), and stays Degraded by the other.
	if err := env.Client.Delete(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "admin-extra"}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "admin-extra published by the Shim", func() (bool, string) {
		rc := &nodev1.RuntimeClass{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "admin-extra"}, rc); err != nil {
			return false, err.Error()
		}
		c := condition(getShim(t, env.Client, "rcown"), v1alpha1.ConditionDegraded)
		return metav1.IsControlledBy(rc, s) && rc.Handler == "spin-other" && !strings.Contains(c.Message, "admin-extra"), c.Message
	})

	if err := env.Client.Delete(ctx, getShim(t, env.Client, "rcown")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the Shim gone", func() (bool, string) {
		err := env.Client.Get(ctx, client.ObjectKey{Name: "rcown"}, &v1alpha1.Shim{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	for _, name := range []string{"spin-extra", "admin-extra"} {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &nodev1.RuntimeClass{}); !apierrors.IsNotFound(err) {
			t.Errorf("the Shim's RuntimeClass %s outlives it: %v", name, err)
		}
	}
	if after := getRuntimeClass(t, env.Client, "admin-primary"); !equality.Semantic.DeepEqual(after, adminBefore) {
		t.Errorf("the admin's RuntimeClass changed by the Shim's deletion:\nbefore %+v\n after %+v", adminBefore, after)
	}
	var events []string
	for _, n := range eventNotes(t, env.Client, "rcown", corev1.EventTypeWarning) {
		if strings.Contains(n, "admin-primary") {
			events = append(events, n)
		}
	}
	if len(events) == 0 {
		t.Error("no Warning Event names the admin's RuntimeClass")
	}
}

func getRuntimeClass(t testing.TB, c client.Client, name string) *nodev1.RuntimeClass {
	t.Helper()
	rc := &nodev1.RuntimeClass{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, rc); err != nil {
		t.Fatal(err)
	}
	return rc
}
