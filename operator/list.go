package operator

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/operator/jobview"
)

// listNodes returns every Node: the cache's own (r.nodes, once
// SetupWithManager wired it), or read through the client.
func (r *Reconciler) listNodes(ctx context.Context) ([]*corev1.Node, error) {
	if r.nodes != nil {
		return r.nodes.List(func(*corev1.Node) bool { return true }), nil
	}
	var nodes corev1.NodeList
	if err := r.client.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	return pointers(nodes.Items), nil
}

// listJobs returns the operator's Jobs (every Shim's: the node gate counts
// them all), as listNodes.
func (r *Reconciler) listJobs(ctx context.Context) ([]*batchv1.Job, error) {
	if r.jobs != nil {
		return r.jobs.List(func(j *batchv1.Job) bool {
			return j.Namespace == r.opts.Namespace && j.Labels[jobview.LabelManagedBy] == jobview.ManagedBy
		}), nil
	}
	var jobs batchv1.JobList
	if err := r.client.List(ctx, &jobs, client.InNamespace(r.opts.Namespace), client.MatchingLabels{jobview.LabelManagedBy: jobview.ManagedBy}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list Jobs in %s: %w", r.opts.Namespace, err)
	}
	return pointers(jobs.Items), nil
}

func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
