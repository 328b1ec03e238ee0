package results

import (
	"context"

	"fmt"

	"golang.org/x/sync/errgroup"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/operator/nodejob"
)

// Reader reads what the installer Jobs report (their pods' results) into a
// reconcile's snapshot, and remembers each Job's result, so that a Job's
// pods are read once: ahead of the reconcile when a Job completes
// (Prefetching), or by the reconcile that needs it (ReadFinished,
// ReadPulls).
type Reader struct {
	reader    client.Reader
	namespace string
	results   results
	prefetch  prefetches
}

// New returns a Reader of the Jobs in namespace, reading their pods
// through reader (the API server: a Job's pods are not cached).
func New(reader client.Reader, namespace string) *Reader {
	return &Reader{reader: reader, namespace: namespace}
}

// group runs the reads of a reconcile (one per node) a few at a time.
func (r *Reader) group(ctx context.Context) *errgroup.Group {
	g, _ := errgroup.WithContext(ctx)
	g.SetLimit(64)
	return g
}

// Pods lists the Job's pods (those the Job controller labelled with its
// UID), the ones nodejob.ResultOf reads.
func Pods(ctx context.Context, r client.Reader, job *batchv1.Job) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(job.Namespace), client.MatchingLabels{nodejob.LabelControllerUID: string(job.UID)}); err != nil {
		return nil, fmt.Errorf("pods of Job %s: %w", job.Name, err)
	}
	return pods.Items, nil
}
