package operator

import (
	"context"
	"fmt"
	"io"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/nodejob"
	"github.com/shimkit/shimkit/internal/operator/results"
)

// +kubebuilder:rbac:groups="",resources=pods/log,verbs=get,namespace=shimkit-system
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=create;patch,namespace=shimkit-system

// JobLogs reads the end of the log of a Job's newest pod's installer.
type JobLogs interface {
	JobLog(ctx context.Context, job *batchv1.Job) ([]byte, error)
}

// tailLines is how many lines of a failed installer's log are read: more
// than results.LogMaxBytes holds of the installer's JSON lines.
const tailLines = 2000

// ClientsetLogs reads installer logs through the API server (which asks
// the node's kubelet).
type ClientsetLogs struct {
	Clientset kubernetes.Interface
}

var _ JobLogs = (*ClientsetLogs)(nil)

// JobLog reads the last lines of the installer container of the Job's
// newest pod.
func (l *ClientsetLogs) JobLog(ctx context.Context, job *batchv1.Job) ([]byte, error) {
	pods, err := l.Clientset.CoreV1().Pods(job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: nodejob.LabelControllerUID + "=" + string(job.UID)})
	if err != nil {
		return nil, fmt.Errorf("pods of Job %s: %w", job.Name, err)
	}
	pod := nodejob.NewestPod(pods.Items)
	if pod == nil {
		return nil, fmt.Errorf("Job %s has no pod left", job.Name)
	}
	stream, err := l.Clientset.CoreV1().Pods(job.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: nodejob.Container, TailLines: ptr.To(int64(tailLines))}).Stream(ctx)
	if err != nil {
		return nil, fmt.Errorf("log of pod %s: %w", pod.Name, err)
	}
	defer stream.Close()
	return io.ReadAll(io.LimitReader(stream, 4*results.LogMaxBytes))
}

// keepLog keeps what a failed installer run leaves: a copy of the log's
// end (results.KeepLog), then its Job for FailedJobTTL (its pod's log with
// it), marked kept (jobview.AnnotationLogKept) in the same write: until
// then, each reconcile decides to keep it again, so an operator stopped
// in between leaves it to the next. Neither is the run's record, which
// the node has: what cannot be kept is told in a Warning Event, and the
// reconcile goes on.
func (r *executor) keepLog(ctx context.Context, a decide.KeepLog) {
	if r.opts.Logs != nil {
		log, err := r.opts.Logs.JobLog(ctx, a.Job)
		if err == nil {
			err = results.KeepLog(ctx, r.client, a.Job.Namespace, a.Shim, a.Node, results.LogCopy{Job: a.Job.Name, Reason: a.Reason, Time: a.At, Log: string(log)})
		}
		if ctx.Err() != nil {
			return // stopping: the next reconcile keeps it
		}
		if err != nil {
			r.recorder.Say(ctx, a.Shim, a.NotCopied.Answered(err))
		}
	}
	ttl := int32(r.opts.FailedJobTTL / time.Second)
	if cur := a.Job.Spec.TTLSecondsAfterFinished; cur != nil {
		ttl = max(ttl, *cur)
	}
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"true"}},"spec":{"ttlSecondsAfterFinished":%d}}`, jobview.AnnotationLogKept, ttl))
	if err := r.client.Patch(ctx, a.Job.DeepCopy(), patch); client.IgnoreNotFound(err) != nil {
		r.recorder.Say(ctx, a.Shim, a.NotKept.Answered(err))
	}
}
