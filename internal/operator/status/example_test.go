package status_test

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	"github.com/shimkit/shimkit/internal/operator/phase"
	"github.com/shimkit/shimkit/internal/operator/status"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// A wave of nodes makes one Event per reason, not one per node: the
// reconcile's notes are gathered and, once the rollout settles, emitted.
func ExampleReporter_Flush() {
	rec := events.NewFakeRecorder(10)
	r := status.New(nil, phase.NewRecorder(rec, nil), nil, nil)
	shim := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "spin"}}
	var notes status.NodeEvents
	for _, n := range []string{"node-2", "node-1", "node-3"} {
		notes.Add("Installed", "Install", "node "+n)
	}
	r.Flush(context.Background(), shim, &notes, true, time.Now())
	fmt.Println(<-rec.Events)
	// Output:
	// Normal Installed 3 nodes: node node-1; node node-2; node node-3
}
