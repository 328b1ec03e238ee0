package operator

import (
	"context"
	"fmt"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/operator/decide"
	"github.com/shimkit/shimkit/operator/jobview"
)

// An action is one step of a decision: a write, or what the operator
// records of one once it is written (a metric, a held-back note, the retry
// request acted on). Its do carries it out and holds no policy: what to do
// was decided before any action ran. act runs a decision's actions in
// order and stops at the first error.
type action interface {
	do(ctx context.Context, r *executor) error
}

// act carries out the actions in order, stopping at the first error.
func (r *executor) act(ctx context.Context, acts []action) error {
	for _, a := range acts {
		if err := a.do(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// together runs its actions concurrently (a few at a time: one per node
// of a wave), after the actions before it and before the ones after.
type together []action

func (t together) do(ctx context.Context, r *executor) error {
	g := r.group(ctx)
	for _, a := range t {
		g.Go(func() error { return a.do(ctx, r) })
	}
	return g.Wait()
}

// inOrder runs its actions one after the other (one node's steps, within
// a together).
type inOrder []action

func (s inOrder) do(ctx context.Context, r *executor) error { return r.act(ctx, s) }

// deleteJob deletes a Job (its pods in the background); one already gone
// is fine.
type deleteJob struct {
	job  *batchv1.Job
	node string
	why  string
}

func (a deleteJob) do(ctx context.Context, r *executor) error {
	err := r.client.Delete(ctx, a.job, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("%s node %s: delete Job %s: %w", a.why, a.node, a.job.Name, err)
	}
	return nil
}

// patchJob ends a Job with a merge patch (nodejob.FailPatch).
type patchJob struct {
	job    *batchv1.Job
	node   string
	reason string
	patch  []byte
}

func (a patchJob) do(ctx context.Context, r *executor) error {
	if err := r.client.Patch(ctx, a.job, client.RawPatch(types.MergePatchType, a.patch)); err != nil {
		return fmt.Errorf("end installer Job %s of node %s (%s): %w", a.job.Name, a.node, a.reason, err)
	}
	return nil
}

// markInstalled labels the node as having the Shim at specHash
// (nodelabel.MarkOn: its install record too).
type markInstalled struct {
	node     *corev1.Node
	shim     string
	uid      types.UID
	specHash string
}

func (a markInstalled) do(ctx context.Context, r *executor) error {
	return nodelabel.MarkOn(ctx, r.client, a.node, a.shim, a.uid, a.specHash)
}

// unmark removes the Shim's label and records from the node.
type unmark struct{ node, shim string }

func (a unmark) do(ctx context.Context, r *executor) error {
	return nodelabel.Unmark(ctx, r.client, a.node, a.shim)
}

// dropRecords removes records another Shim object of the name left.
type dropRecords struct {
	node string
	keys []string
}

func (a dropRecords) do(ctx context.Context, r *executor) error {
	return nodelabel.DropRecords(ctx, r.client, a.node, a.keys...)
}

// untaint removes the startup taint from a node with a patch carrying the
// resourceVersion read: a taint list changed meanwhile is read again on
// the next reconcile, not overwritten (a conflict is no error). A removal
// is told in an Event.
type untaint struct {
	node *corev1.Node
	shim *v1alpha1.Shim
}

func (a untaint) do(ctx context.Context, r *executor) error {
	node := a.node.DeepCopy()
	node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == PendingTaint })
	err := r.client.Patch(ctx, node, client.MergeFromWithOptions(a.node, client.MergeFromWithOptimisticLock{}))
	switch {
	case apierrors.IsConflict(err):
		return nil
	case err != nil:
		return fmt.Errorf("remove taint %s from node %s: %w", PendingTaint, node.Name, err)
	}
	r.event(a.shim, node, corev1.EventTypeNormal, "TaintRemoved", "Install", "node %s has every Shim that selects it: taint %s removed", node.Name, PendingTaint)
	return nil
}

// markFailed records a Job's failure on the node.
type markFailed struct {
	node, shim string
	failure    nodelabel.Failure
}

func (a markFailed) do(ctx context.Context, r *executor) error {
	return nodelabel.MarkFailed(ctx, r.client, a.node, a.shim, a.failure)
}

// clearFailure removes the Shim's failure record from the node.
type clearFailure struct{ node, shim string }

func (a clearFailure) do(ctx context.Context, r *executor) error {
	return nodelabel.ClearFailure(ctx, r.client, a.node, a.shim)
}

// markVerified records a verification's finding on the node.
type markVerified struct {
	node, shim string
	found      nodelabel.Verification
}

func (a markVerified) do(ctx context.Context, r *executor) error {
	return nodelabel.MarkVerified(ctx, r.client, a.node, a.shim, a.found)
}

// emitEvent records an Event regarding the Shim (related: a node, or nil).
type emitEvent struct {
	shim                        *v1alpha1.Shim
	related                     runtime.Object
	eventType, reason, act, msg string
}

func (a emitEvent) do(_ context.Context, r *executor) error {
	r.event(a.shim, a.related, a.eventType, a.reason, a.act, "%s", a.msg)
	return nil
}

// note adds a per-node Normal note, emitted with the others of its reason
// (decide.NodeEvents).
type note struct {
	events              *decide.NodeEvents
	reason, act, detail string
}

func (a note) do(context.Context, *executor) error {
	a.events.Add(a.reason, a.act, a.detail)
	return nil
}

// countJob counts a finished Job in the metrics (once per Job).
type countJob struct {
	shim string
	job  *jobview.View
}

func (a countJob) do(_ context.Context, r *executor) error {
	r.metrics.JobFinished(a.shim, a.job)
	return nil
}

// rememberRetry records the retry request acted on and the Jobs it
// deleted, once they are deleted (retries).
type rememberRetry struct {
	shim    *v1alpha1.Shim
	request string
	jobs    []types.UID
}

func (a rememberRetry) do(_ context.Context, r *executor) error {
	for _, uid := range a.jobs {
		r.retries.forgetJob(a.shim, uid)
	}
	r.retries.put(a.shim, a.request)
	return nil
}
