package watch

import (
	"maps"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/shimkit/shimkit/internal/nodelabel/record"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/nodelabel"
)

// The watches pass only the changes a reconcile acts on. A reconcile
// reads every node and Job of the rollout; during a rollout each of its own
// writes (a Job created, a node labelled, its status) would otherwise
// requeue the Shim once more for nothing, and reconciles of one Shim run
// one at a time: at 1,000 nodes most reconciles were such echoes, and the
// useful ones queued behind them (BENCHMARKS.md).

// ShimChanged passes a Shim's creation and deletion, a change of its spec
// (generation: deletion with finalizers bumps it too) or of its
// annotations (a retry request), not its status, which only the operator
// writes.
func ShimChanged() predicate.Predicate {
	return predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, deletionStarted())
}

// deletionStarted passes the update that sets an object's
// deletionTimestamp.
func deletionStarted() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
		},
	}
}

// JobChanged passes what changes a node's state: a Job that finished
// (complete or failed) or started to be deleted, a Job deleted (a retry,
// the TTL), and a batch Job created (its partners learn it holds their
// node); not a Job the reconcile itself created, nor its progress.
func JobChanged() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return len(e.Object.GetOwnerReferences()) > 1 },
		DeleteFunc: func(event.DeleteEvent) bool { return true },
		UpdateFunc: func(e event.UpdateEvent) bool {
			a, aok := e.ObjectOld.(*batchv1.Job)
			b, bok := e.ObjectNew.(*batchv1.Job)
			if !aok || !bok {
				return true
			}
			return jobDone(a) != jobDone(b) || a.DeletionTimestamp.IsZero() != b.DeletionTimestamp.IsZero()
		},
		GenericFunc: func(event.GenericEvent) bool { return true },
	}
}

// jobDone: the Job has its Complete or Failed condition.
func jobDone(j *batchv1.Job) bool {
	v := jobview.ViewOf(j)
	return v.Condition(batchv1.JobComplete) != nil || v.Condition(batchv1.JobFailed) != nil
}

// ForeignLabelChanged passes a node whose labels changed outside shimkit's
// own keys (nodelabel.Prefix): what node selectors see. The operator's own
// label writes are echoes of a reconcile; a label of shimkit's changed by
// hand is seen on the next reconcile (at the latest the verify period).
// On a node with the startup taint every change of a label or an
// annotation passes: the Shim that labels the node last may not see the
// others' labels yet, and a node whose label a node pool declared changes
// only in its records (annotations) when it is installed; the taint goes
// when a reconcile sees them all.
func ForeignLabelChanged() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			if n, ok := e.ObjectNew.(*corev1.Node); ok && slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == nodeview.PendingTaint }) {
				return !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) ||
					!maps.Equal(e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations())
			}
			return !maps.Equal(foreignLabels(e.ObjectOld), foreignLabels(e.ObjectNew))
		},
	}
}

func foreignLabels(o client.Object) map[string]string {
	out := make(map[string]string, len(o.GetLabels()))
	for k, v := range o.GetLabels() {
		if !strings.HasPrefix(k, nodelabel.Prefix) {
			out[k] = v
		}
	}
	return out
}

// NodeInfoChanged passes a node whose reported operating system,
// architecture or container runtime changed (its eligibility may have),
// or whose runtime handlers changed (a Shim's may be gone: drift), or
// that was reimaged or booted again (its machine or boot ID changed).
func NodeInfoChanged() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			a, aok := e.ObjectOld.(*corev1.Node)
			b, bok := e.ObjectNew.(*corev1.Node)
			if !aok || !bok {
				return false
			}
			x, y := a.Status.NodeInfo, b.Status.NodeInfo
			return x.OperatingSystem != y.OperatingSystem || x.Architecture != y.Architecture || x.ContainerRuntimeVersion != y.ContainerRuntimeVersion ||
				x.KubeletVersion != y.KubeletVersion || // how an image reaches its installer
				record.Machine(a) != record.Machine(b) || // reimaged in place
				record.Boot(a) != record.Boot(b) || // booted again: verified again
				!slices.EqualFunc(a.Status.RuntimeHandlers, b.Status.RuntimeHandlers, func(p, q corev1.NodeRuntimeHandler) bool { return p.Name == q.Name })
		},
	}
}

// NodeLifecycle passes node creation and deletion (label changes pass
// through foreignLabelChanged), not the kubelet's status heartbeats.
func NodeLifecycle() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return true },
		DeleteFunc:  func(e event.DeleteEvent) bool { return true },
		UpdateFunc:  func(e event.UpdateEvent) bool { return false },
		GenericFunc: func(e event.GenericEvent) bool { return false },
	}
}
