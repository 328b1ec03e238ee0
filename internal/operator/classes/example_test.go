package classes_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shimkit/shimkit/internal/operator/classes"
	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// Once a node has the shim, the Shim's RuntimeClass is published,
// scheduling onto the nodes with its label. (The fake client stands in
// for the API server here; the operator's tests use a real one.)
func ExampleClasses_Publish() {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).Build()
	shim := &v1alpha1.Shim{
		ObjectMeta: metav1.ObjectMeta{Name: "spin", UID: "uid-1"},
		Spec:       v1alpha1.ShimSpec{RuntimeClass: v1alpha1.RuntimeClassSpec{Name: "wasmtime-spin", Handler: "spin"}},
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
	cs := classes.New(c, c, nil)

	set, err := cs.Read(ctx, shim) // the reconcile's snapshot
	if err != nil {
		fmt.Println(err)
		return
	}
	obs := &decide.Snapshot{Shim: shim, Classes: set, Views: []decide.NodeView{{Node: node, Label: nodelabel.Installed}}}
	plan := decide.Classes(obs, false) // pure: what to write
	if _, err := cs.Publish(ctx, obs.Shim, obs.Classes.Clone(), plan); err != nil {
		fmt.Println(err)
		return
	}
	var rc nodev1.RuntimeClass
	_ = c.Get(ctx, client.ObjectKey{Name: "wasmtime-spin"}, &rc)
	fmt.Println(plan.Published, rc.Handler, rc.Scheduling.NodeSelector)
	// Output:
	// true spin map[shim.containerd.x-k8s.io/spin:installed]
}
