package watch_test

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/watch"
)

// A Job's progress does not requeue its Shim; its end does.
func ExampleJobChanged() {
	running := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "spin-n1", Labels: map[string]string{jobview.LabelManagedBy: jobview.ManagedBy}}}
	done := running.DeepCopy()
	done.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: "True"}}
	p := watch.JobChanged()
	fmt.Println(p.Update(event.UpdateEvent{ObjectOld: running, ObjectNew: running.DeepCopy()}))
	fmt.Println(p.Update(event.UpdateEvent{ObjectOld: running, ObjectNew: done}))
	// Output:
	// false
	// true
}
