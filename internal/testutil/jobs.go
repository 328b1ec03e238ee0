package testutil

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/jobview"
)

// FinishedJob is an installer Job of the operation op that ran 7 s and
// failed or completed, as the operator's view of it, with its result read
// (res nil: none was readable).
func FinishedJob(uid string, op string, failed bool, res *plan.NodeResult) *jobview.View {
	start := metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	end := metav1.NewTime(start.Add(7 * time.Second))
	cond := batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: end}
	st := batchv1.JobStatus{StartTime: &start}
	if failed {
		cond.Type, cond.Reason = batchv1.JobFailed, "BackoffLimitExceeded"
	} else {
		st.CompletionTime = &end
	}
	st.Conditions = []batchv1.JobCondition{cond}
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Labels: map[string]string{jobview.LabelOp: op}}, Status: st}
	v := jobview.ViewOf(j)
	v.Result, v.ResultRead = res, res != nil
	return v
}
