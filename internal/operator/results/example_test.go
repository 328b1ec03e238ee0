package results_test

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/nodejob"
	"github.com/shimkit/shimkit/internal/operator/results"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// A failed Job's result is read once, into the snapshot (fresh: its
// failure is reported by this reconcile), and remembered for the next.
// (The fake client stands in for the API server; the operator's tests use
// a real one.)
func ExampleReader_ReadFinished() {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	res := &plan.NodeResult{APIVersion: plan.APIVersion, Kind: plan.KindNodeResult, Shim: plan.ShimRef{Name: "spin"},
		Node: "node-1", Operation: plan.OpInstall, Outcome: plan.Failed, Reason: plan.ReasonConfigInvalid}
	data, _ := plan.EncodeResult(res, plan.MaxTerminationMessage)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "install-spin-node-1", Namespace: "shimkit-system", UID: "job-1",
			Annotations: map[string]string{nodejob.ResultAnnotation: string(data)}},
		Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue}}},
	}
	r := results.New(fake.NewClientBuilder().WithScheme(scheme).Build(), "shimkit-system")
	obs := &decide.Snapshot{
		Shim:  &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "spin"}},
		Views: []decide.NodeView{{Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, Job: jobview.ViewOf(job)}},
	}
	if err := r.ReadFinished(ctx, obs); err != nil {
		fmt.Println(err)
		return
	}
	got, read := r.Get("spin", "job-1")
	fmt.Println(obs.Fresh[0], obs.Views[0].Job.Result.Reason, read, got.Outcome)
	// Output:
	// true ConfigInvalid true Failed
}
