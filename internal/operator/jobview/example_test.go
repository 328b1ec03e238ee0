package jobview_test

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/jobview"
)

// A failed installer Job says why through the installer's result, read
// from its pod.
func ExampleView_Failure() {
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{jobview.LabelOp: jobview.OpInstall, jobview.LabelSpecHash: "015b8e1f54632b38"}},
		Status:     batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "PodFailurePolicy"}}},
	}
	v := jobview.ViewOf(job)
	v.Result = &plan.NodeResult{Outcome: plan.RolledBack, Reason: plan.ReasonConfigInvalid, Message: "/etc/containerd/config.toml:3: unterminated table"}
	reason, message := v.Failure()
	fmt.Println(v.Failed(), reason, message)
	// Output: true ConfigInvalid /etc/containerd/config.toml:3: unterminated table
}
