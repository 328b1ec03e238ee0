package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/shimkit/shimkit/internal/nodelabel/record"
	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/status"
	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// acting is what carrying out one reconcile's plan keeps of its own, so
// that the snapshot and the plan are only read: the per-node Events it
// gathers (decide.Note, a Job started), the RuntimeClasses as its writes
// leave them (a takeover, then the update of the class taken over), what
// the plan says of the Events gathered (nil: no plan was made), and
// whether the snapshot's notices went out.
type acting struct {
	obs       *observed
	events    status.NodeEvents
	classes   *decide.ClassSet
	eventPlan *decide.EventPlan
	notified  bool
}

func newActing(obs *observed) *acting {
	return &acting{obs: obs, classes: obs.Classes.Clone()}
}

// act carries out a decision's actions (package decide) in order,
// stopping at the first error. It holds no policy: what to do was decided
// before any action ran; each case says only how.
func (r *executor) act(ctx context.Context, run *acting, acts []decide.Action) error {
	for _, a := range acts {
		if err := r.do(ctx, run, a); err != nil {
			return err
		}
	}
	return nil
}

func (r *executor) do(ctx context.Context, run *acting, a decide.Action) error {
	switch a := a.(type) {
	case decide.Together:
		g := r.group(ctx)
		for _, one := range a {
			g.Go(func() error { return r.do(ctx, run, one) })
		}
		return g.Wait()
	case decide.InOrder:
		return r.act(ctx, run, a)
	case decide.DeleteJob:
		err := r.client.Delete(ctx, a.Job, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("%s node %s: delete Job %s: %w", a.Why, a.Node, a.Job.Name, err)
		}
	case decide.PatchJob:
		if err := r.client.Patch(ctx, a.Job, client.RawPatch(types.MergePatchType, a.Patch)); err != nil {
			return fmt.Errorf("end installer Job %s of node %s (%s): %w", a.Job.Name, a.Node, a.Reason, err)
		}
	case decide.MarkInstalled:
		return nodelabel.MarkOn(ctx, r.client, a.Node, a.Shim, a.UID, a.SpecHash, nodelabel.WithSchedulingLabel(a.Scheduling))
	case decide.Unmark:
		return nodelabel.Unmark(ctx, r.client, a.Node, a.Shim, nodelabel.WithSchedulingLabel(a.Scheduling))
	case decide.Fence:
		return r.fence(ctx, a.Node, a.Taint, true)
	case decide.Unfence:
		return r.fence(ctx, a.Node, a.Taint, false)
	case decide.DropRecords:
		return nodelabel.DropRecords(ctx, r.client, a.Node, a.Keys...)
	case decide.AddFinalizer:
		return r.finalizer(ctx, a.Shim, true)
	case decide.RemoveFinalizer:
		return r.finalizer(ctx, a.Shim, false)
	case decide.Untaint:
		return r.untaint(ctx, a)
	case decide.Cordon:
		return r.cordon(ctx, a)
	case decide.Release:
		return r.release(ctx, a)
	case decide.Evict:
		r.evict(ctx, a)
	case decide.MarkFailed:
		return nodelabel.MarkFailed(ctx, r.client, a.Node, a.Shim, a.Failure)
	case decide.ClearFailure:
		return nodelabel.ClearFailure(ctx, r.client, a.Node, a.Shim)
	case decide.MarkVerified:
		return nodelabel.MarkVerified(ctx, r.client, a.Node, a.Shim, a.Found)
	case decide.Notice:
		r.recorder.Say(ctx, run.obs.Shim, a)
	case decide.Note:
		run.events.Add(a.Reason, a.Action, a.Detail)
	case decide.CountDrift:
		r.metrics.DriftDetected(a.Shim, a.Node)
	case decide.CountJob:
		r.metrics.JobFinished(a.Shim, a.Job)
	case decide.KeepLog:
		r.keepLog(ctx, a)
	case decide.RememberRetry:
		for _, uid := range a.Jobs {
			r.retries.forgetJob(a.Shim, uid)
		}
		r.retries.put(a.Shim, a.Request, a.Hash)
	default:
		return fmt.Errorf("operator: no executor for action %T", a)
	}
	return nil
}

// finalizer puts the operator's finalizer on the Shim (on) or takes it
// off, with a merge patch of a copy: the reconcile's Shim may carry a
// revision's spec (a revert), which the API server's answer would
// overwrite. A Shim gone already is fine.
func (r *executor) finalizer(ctx context.Context, shim *v1alpha1.Shim, on bool) error {
	obj := shim.DeepCopy()
	patch := client.MergeFrom(obj.DeepCopy())
	if on {
		controllerutil.AddFinalizer(obj, Finalizer)
	} else {
		controllerutil.RemoveFinalizer(obj, Finalizer)
	}
	if err := r.client.Patch(ctx, obj, patch); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("shim %s: finalizer %s (on: %v): %w", shim.Name, Finalizer, on, err)
	}
	return nil
}

// untaint patches the node with the resourceVersion read: a conflict is
// no error (the next reconcile reads the taints again).
func (r *executor) untaint(ctx context.Context, a decide.Untaint) error {
	node := a.Node.DeepCopy()
	node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == PendingTaint })
	err := r.client.Patch(ctx, node, client.MergeFromWithOptions(a.Node, client.MergeFromWithOptimisticLock{}))
	switch {
	case apierrors.IsConflict(err):
		return nil
	case err != nil:
		return fmt.Errorf("remove taint %s from node %s: %w", PendingTaint, node.Name, err)
	}
	r.recorder.Say(ctx, a.Shim, a.Said)
	return nil
}

// fence puts the Shim's fence taint on the node as read (on), or takes
// that taint (key, value and effect) off; a node changed meanwhile is left to the next reconcile, which
// reads it again.
func (r *executor) fence(ctx context.Context, read *corev1.Node, taint corev1.Taint, on bool) error {
	node := read.DeepCopy()
	node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.MatchTaint(&taint) && t.Value == taint.Value })
	if on {
		node.Spec.Taints = append(node.Spec.Taints, taint)
	}
	err := r.client.Patch(ctx, node, client.MergeFromWithOptions(read, client.MergeFromWithOptimisticLock{}))
	switch {
	case apierrors.IsConflict(err):
		return nil
	case err != nil:
		return fmt.Errorf("node %s: fence taint %s (on: %v): %w", node.Name, taint.ToString(), on, err)
	}
	return nil
}

// evict asks the Eviction API to evict the pod. The API server honours
// its PodDisruptionBudgets: a refusal is said in the Warning the plan
// gave (EvictionBlocked) with the API server's answer, and the pod is
// asked again at the next reconcile. A pod already gone is fine.
func (r *executor) evict(ctx context.Context, a decide.Evict) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: a.Namespace, Name: a.Name}}
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: a.Namespace, Name: a.Name}}
	if a.GracePeriodSeconds != nil {
		ev.DeleteOptions = &metav1.DeleteOptions{GracePeriodSeconds: a.GracePeriodSeconds}
	}
	switch err := r.client.SubResource("eviction").Create(ctx, pod, ev); {
	case err == nil:
		r.recorder.Say(ctx, a.Shim, a.Evicted)
	case apierrors.IsNotFound(err):
	default:
		r.recorder.Say(ctx, a.Shim, a.Blocked.Answered(err))
	}
}

// cordon records the Shim's disruption on the node as read and, when the
// Shim sets the cordon, marks it unschedulable: a conflict (the node
// changed since) is no error, the next reconcile reads it again.
func (r *executor) cordon(ctx context.Context, a decide.Cordon) error {
	node := a.Node.DeepCopy()
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[record.DisruptionKey(a.Shim)] = a.Disrupted.Value()
	if a.Disrupted.Cordoned {
		node.Spec.Unschedulable = true
	}
	err := r.client.Patch(ctx, node, client.MergeFromWithOptions(a.Node, client.MergeFromWithOptimisticLock{}))
	if err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("cordon node %s for Shim %s: %w", node.Name, a.Shim, err)
	}
	return nil
}

// release removes the Shim's disruption record from the node and, when
// the Shim set the cordon, lifts it: one merge patch.
func (r *executor) release(ctx context.Context, a decide.Release) error {
	patch := map[string]any{"metadata": map[string]any{"annotations": map[string]any{record.DisruptionKey(a.Shim): nil}}}
	if a.Uncordon {
		patch["spec"] = map[string]any{"unschedulable": nil}
	}
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: a.Node}}
	if err := r.client.Patch(ctx, node, client.RawPatch(types.MergePatchType, data)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("release node %s from Shim %s: %w", a.Node, a.Shim, err)
	}
	return nil
}
