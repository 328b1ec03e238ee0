package phase_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shimkit/shimkit/internal/operator/phase"
)

// A reconcile that writes before its decision is complete is caught.
func ExampleChecked() {
	c := phase.Checked(fake.NewClientBuilder().Build(), func(err error) { fmt.Println("reported:", err) })
	ctx := phase.Start(context.Background())
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	_ = c.Create(ctx, node) // too early: refused
	phase.Decided(ctx)
	fmt.Println("create:", c.Create(ctx, node))
	// Output:
	// reported: create Node /n1: write before the decision is complete
	// create: <nil>
}
