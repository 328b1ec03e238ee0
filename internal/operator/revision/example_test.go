package revision_test

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/revision"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// A target rolled out to every node is recorded as the revision the plan
// names (decide.StatusPlan.Revision, which the status lists first): a
// ControllerRevision of the Shim holds its spec and artifact. (The fake client stands in for the API server;
// the operator's tests use a real one.)
func ExampleStore_Record() {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).Build()
	store := revision.New(c, c, "shimkit-system")
	shim := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "spin", UID: "uid-1"}}
	obs := &decide.Snapshot{Shim: shim, Hash: "0123456789abcdef", RolloutNow: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	rev := &v1alpha1.Revision{SpecHash: obs.Hash, ControllerRevision: decide.RevisionName(shim, obs.Hash)}
	if err := store.Record(ctx, obs, rev, nil); err != nil {
		fmt.Println(err)
		return
	}
	var crs appsv1.ControllerRevisionList
	_ = c.List(ctx, &crs, client.InNamespace("shimkit-system"))
	fmt.Println(crs.Items[0].Name, len(crs.Items))
	// Output:
	// shim-spin-0123456789 1
}
