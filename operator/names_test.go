package operator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestLongNames: a Shim with the longest name Kubernetes allows (253
// characters) on a node with a 63-character name rolls out and back: its
// Jobs are created (names and label values shortened with a hash), the
// node is labelled, the RuntimeClass is published, and deleting the Shim
// uninstalls the node and deletes the RuntimeClass. A second Shim whose
// long name differs only at the end gets Jobs of its own.
func TestLongNames(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	shimName := func(last string) string {
		return strings.Repeat("s", 61) + "." + strings.Repeat("h", 63) + "." + strings.Repeat("i", 63) + "." + strings.Repeat("m", 62) + last
	}
	names := []string{shimName("a"), shimName("b")}
	nodeName := strings.Repeat("n", 62) + "1"
	createNode(t, env.Client, nodeName, map[string]string{corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64"}, linuxNode("amd64"))
	startKubelet(t, env, 50*time.Millisecond, nil)
	// Each Shim in Jobs of its own (not one batch Job for both), so that
	// their shortened Job names are seen to differ.
	startOperatorWith(t, env, env.Config, func(o *operator.Options) { o.BatchWindow = -1 })
	for i, name := range names {
		if len(name) != 253 {
			t.Fatalf("Shim name of %d characters", len(name))
		}
		s := newShim(name, fmt.Sprintf("long-%d", i), "1", nil)
		s.Spec.RuntimeClass.Name = strings.Repeat("r", 250) + fmt.Sprintf("-%d", i)
		if err := env.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range names {
		waitFor(t, 30*time.Second, "Ready", ready(env.Client, name))
	}

	node := &corev1.Node{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
		t.Fatal(err)
	}
	byShim := map[string]int{}
	for _, j := range allJobs(t, env.Client) {
		if len(j.Name) > 63 || j.Spec.Template.Spec.NodeName != nodeName {
			t.Errorf("Job %s (%d characters) for node %q", j.Name, len(j.Name), j.Spec.Template.Spec.NodeName)
		}
		for k, v := range j.Labels {
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				t.Errorf("Job %s: label %s=%s: %v", j.Name, k, v, errs)
			}
		}
		byShim[j.OwnerReferences[0].Name]++
	}
	for i, name := range names {
		if byShim[name] != 1 {
			t.Errorf("Shim %d has %d Jobs, want 1 (%v)", i, byShim[name], byShim)
		}
		if ok, hash := nodelabel.State(node, name); !ok || hash != getShim(t, env.Client, name).Status.SpecHash {
			t.Errorf("node not labelled for Shim %d: %v", i, node.Labels)
		}
		rc := getRuntimeClass(t, env.Client, getShim(t, env.Client, name).Spec.RuntimeClass.Name)
		if !metav1.IsControlledBy(rc, getShim(t, env.Client, name)) {
			t.Errorf("RuntimeClass %s not the Shim's", rc.Name)
		}
	}

	if err := env.Client.Delete(ctx, getShim(t, env.Client, names[0])); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the first Shim gone", func() (bool, string) {
		err := env.Client.Get(ctx, client.ObjectKey{Name: names[0]}, &v1alpha1.Shim{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if err := env.Client.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
		t.Fatal(err)
	}
	if _, labelled := node.Labels[nodelabel.Key(names[0])]; labelled {
		t.Errorf("the node keeps the deleted Shim's label: %v", node.Labels)
	}
	if ok, _ := nodelabel.State(node, names[1]); !ok {
		t.Errorf("the other Shim's label went too: %v", node.Labels)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: strings.Repeat("r", 250) + "-0"}, &nodev1.RuntimeClass{}); !apierrors.IsNotFound(err) {
		t.Errorf("the deleted Shim's RuntimeClass: %v", err)
	}
}

func allJobs(t testing.TB, c client.Client) []batchv1.Job {
	t.Helper()
	var jobs batchv1.JobList
	if err := c.List(context.Background(), &jobs, client.InNamespace(jobNamespace)); err != nil {
		t.Fatal(err)
	}
	return jobs.Items
}

// TestDefaultedHandler: a Shim written as in the proposal, without
// runtimeClass.handler, rolls out with the RuntimeClass name as its
// handler: in the node plan and in the published RuntimeClass.
func TestDefaultedHandler(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	createNode(t, env.Client, "node-1", map[string]string{corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64"}, linuxNode("amd64"))
	startKubelet(t, env, 50*time.Millisecond, nil)
	startOperator(t, env)
	s := newShim("spin-v2", "spin-v2", "1", nil)
	s.Spec.RuntimeClass = v1alpha1.RuntimeClassSpec{Name: "spin-v2"}
	if err := env.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "Ready", ready(env.Client, "spin-v2"))
	rc := &nodev1.RuntimeClass{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "spin-v2"}, rc); err != nil || rc.Handler != "spin-v2" {
		t.Errorf("RuntimeClass %+v: %v", rc, err)
	}
	for _, j := range allJobs(t, env.Client) {
		p, err := plan.Decode([]byte(j.Spec.Template.Annotations[operator.PlanAnnotation]))
		if err != nil || len(p.Handlers) != 1 || p.Handlers[0].Name != "spin-v2" || p.Handlers[0].RuntimeType != "io.containerd.spin-v2.v2" {
			t.Errorf("Job %s plan handlers %+v: %v", j.Name, p.Handlers, err)
		}
	}
}
