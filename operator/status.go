package operator

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/rollout"
)

// updateStatus writes counts and conditions with server-side apply (field
// owner shimkit), skipping the request when nothing changed.
func (r *Reconciler) updateStatus(ctx context.Context, obs *observed, plan, removal rollout.Plan, rcReady bool) error {
	shim := obs.shim
	st := v1alpha1.ShimStatus{ObservedGeneration: shim.Generation, SpecHash: obs.hash}
	for _, v := range obs.views {
		if v.matching {
			st.Nodes++
			if v.label == nodelabel.Installed && v.specHash == obs.hash {
				st.UpdatedNodes++
			}
		}
		if v.job != nil && v.job.running() {
			st.InProgressNodes++
		}
	}
	failing := failedNodes(obs, plan, removal)
	st.FailedNodes = int32(len(failing))
	if len(failing) > 10 {
		failing = failing[:10]
	}
	st.FailingNodes = failing

	deleting := !shim.DeletionTimestamp.IsZero()
	cond := func(t string, ok bool, reason, msg string) metav1.Condition {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: shim.Generation}
	}
	halted := plan.Halted || removal.Halted
	done := plan.Done && removal.Done && !deleting
	var ready, progressing, degraded metav1.Condition
	switch {
	case deleting:
		ready = cond(v1alpha1.ConditionReady, false, "Deleting", fmt.Sprintf("removing the shim from %d nodes", removal.Remaining))
	case done && rcReady:
		ready = cond(v1alpha1.ConditionReady, true, "RolledOut", fmt.Sprintf("%d of %d nodes have the current spec; %s published", st.UpdatedNodes, st.Nodes, runtimeClassNames(shim)))
	case done:
		ready = cond(v1alpha1.ConditionReady, false, "NoNodes", "no node matches the selector; no RuntimeClass is published")
	default:
		ready = cond(v1alpha1.ConditionReady, false, "RollingOut", fmt.Sprintf("%d of %d nodes have the current spec", st.UpdatedNodes, st.Nodes))
	}
	switch {
	case halted:
		progressing = cond(v1alpha1.ConditionProgressing, false, "Halted", "a node failed; no new node starts until the failure is resolved or the spec changes")
	case !done:
		progressing = cond(v1alpha1.ConditionProgressing, true, "NodesChanging", fmt.Sprintf("%d nodes changing (maxUpdate %d), %d to go", plan.InFlight+removal.InFlight, max(plan.Budget, removal.Budget), plan.Remaining+removal.Remaining))
	default:
		progressing = cond(v1alpha1.ConditionProgressing, false, "Idle", "every node is done")
	}
	if halted {
		var names []string
		for _, f := range failing {
			names = append(names, f.Node+" ("+f.Reason+")")
		}
		degraded = cond(v1alpha1.ConditionDegraded, true, "NodeFailed", "failed on "+strings.Join(names, ", "))
	} else {
		degraded = cond(v1alpha1.ConditionDegraded, false, "NoFailures", "no node failed")
	}
	conditions := shim.Status.Conditions
	for _, c := range []metav1.Condition{ready, progressing, degraded} {
		meta.SetStatusCondition(&conditions, c)
	}
	st.Conditions = conditions
	r.metrics.observe(shim, st, done && rcReady)

	if equalStatus(shim.Status, st) {
		return nil
	}
	u, err := statusApply(shim, st)
	if err != nil {
		return err
	}
	if err := r.client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("status of Shim %s: %w", shim.Name, err)
	}
	shim.Status = st
	return nil
}

const fieldOwner = "shimkit"

// statusApply is the apply request for the status subresource.
func statusApply(shim *v1alpha1.Shim, st v1alpha1.ShimStatus) (*unstructured.Unstructured, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&v1alpha1.Shim{Status: st})
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"status": obj["status"]}}
	u.SetAPIVersion(v1alpha1.GroupVersion.String())
	u.SetKind("Shim")
	u.SetName(shim.Name)
	return u, nil
}

// equalStatus compares statuses, ignoring when conditions last changed.
func equalStatus(a, b v1alpha1.ShimStatus) bool {
	strip := func(s v1alpha1.ShimStatus) v1alpha1.ShimStatus {
		s = *s.DeepCopy()
		for i := range s.Conditions {
			s.Conditions[i].LastTransitionTime = metav1.Time{}
		}
		return s
	}
	return equality.Semantic.DeepEqual(strip(a), strip(b))
}

// runtimeClassNames says which RuntimeClasses a Shim publishes:
// "RuntimeClass kata is" or "RuntimeClasses kata, kata-qemu are".
func runtimeClassNames(shim *v1alpha1.Shim) string {
	names := []string{shim.Spec.RuntimeClass.Name}
	for _, h := range shim.Spec.Handlers {
		names = append(names, h.RuntimeClass.Name)
	}
	if len(names) == 1 {
		return "RuntimeClass " + names[0] + " is"
	}
	return "RuntimeClasses " + strings.Join(names, ", ") + " are"
}
