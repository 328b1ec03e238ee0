package operator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/runtimeclass"
)

// classSpec is one RuntimeClass of a Shim and the spec field that names it.
type classSpec struct {
	runtimeclass.Spec
	field string // spec.runtimeClass.name, spec.handlers[1].runtimeClass.name
}

// runtimeClassSpecs are the Shim's RuntimeClasses: the primary handler's,
// then one per spec.handlers. All schedule onto the nodes with the Shim's
// one node label: the handlers of a Shim are installed and removed
// together, by one installer run per node.
func runtimeClassSpecs(shim *v1alpha1.Shim) []classSpec {
	classes := []v1alpha1.RuntimeClassSpec{shim.Spec.RuntimeClass}
	for _, h := range shim.Spec.Handlers {
		classes = append(classes, h.RuntimeClass)
	}
	out := make([]classSpec, 0, len(classes))
	for i, rc := range classes {
		s := classSpec{Spec: runtimeclass.Spec{
			Name:         rc.Name,
			Handler:      rc.Handler,
			NodeSelector: map[string]string{nodelabel.Key(shim.Name): nodelabel.Installed},
			Labels:       map[string]string{labelManagedBy: managedBy, labelShim: labelValue(shim.Name)},
			Owner:        metav1.NewControllerRef(shim, v1alpha1.GroupVersion.WithKind("Shim")),
		}, field: "spec.runtimeClass.name"}
		if i > 0 {
			s.field = fmt.Sprintf("spec.handlers[%d].runtimeClass.name", i-1)
		}
		for _, t := range rc.Tolerations {
			s.Tolerations = append(s.Tolerations, corev1.Toleration{
				Key: t.Key, Operator: corev1.TolerationOperator(t.Operator), Value: t.Value,
				Effect: corev1.TaintEffect(t.Effect), TolerationSeconds: t.TolerationSeconds,
			})
		}
		out = append(out, s)
	}
	return out
}

// ownedBy reports whether the RuntimeClass belongs to the Shim: its
// controller reference names the Shim's UID (a Shim recreated under the
// same name does not own its predecessor's).
func ownedBy(rc *nodev1.RuntimeClass, shim *v1alpha1.Shim) bool {
	return metav1.IsControlledBy(rc, shim)
}

// classes is what ensureRuntimeClasses found: whether every RuntimeClass
// is published, and the messages of those that belong to someone else.
type classes struct {
	published bool
	conflicts []string
}

// ensureRuntimeClasses creates the Shim's RuntimeClasses once the first
// node has the shim, keeps those it owns up to date, and deletes those it
// owns that the spec no longer names. A RuntimeClass of one of its names
// that it does not own is left as it is: a conflict.
func (r *Reconciler) ensureRuntimeClasses(ctx context.Context, obs *observed) (classes, error) {
	anyInstalled := false
	for _, v := range obs.views {
		anyInstalled = anyInstalled || v.label == nodelabel.Installed
	}
	specs := runtimeClassSpecs(obs.shim)
	if err := r.deleteStaleRuntimeClasses(ctx, obs.shim, specs); err != nil {
		return classes{}, err
	}
	out := classes{published: true}
	for _, spec := range specs {
		ok, conflict, err := r.ensureRuntimeClass(ctx, obs.shim, spec, anyInstalled)
		if err != nil {
			return classes{}, err
		}
		out.published = out.published && ok
		if conflict != "" {
			out.conflicts = append(out.conflicts, conflict)
		}
	}
	return out, nil
}

// ensureRuntimeClass creates the RuntimeClass when it is absent (and a node
// has the shim), or updates it when it is the Shim's and out of date. It
// reports whether it is published, or why it belongs to someone else.
// Every write is conditional: Create fails if someone created it meanwhile,
// Update and Delete carry what was read (resourceVersion, UID), so shimkit
// never writes a RuntimeClass it has not just seen to be its own.
func (r *Reconciler) ensureRuntimeClass(ctx context.Context, shim *v1alpha1.Shim, spec classSpec, anyInstalled bool) (bool, string, error) {
	existing := &nodev1.RuntimeClass{}
	err := r.client.Get(ctx, client.ObjectKey{Name: spec.Name}, existing)
	switch {
	case apierrors.IsNotFound(err):
		if !anyInstalled {
			return false, "", nil // not yet: no node has the shim
		}
		return r.createRuntimeClass(ctx, shim, spec)
	case err != nil:
		return false, "", fmt.Errorf("get RuntimeClass %s: %w", spec.Name, err)
	case !ownedBy(existing, shim):
		msg := conflictMessage(existing, spec)
		r.event(shim, existing, corev1.EventTypeWarning, v1alpha1.ReasonRuntimeClassConflict, "Apply", "%s", msg)
		return false, msg, nil
	case existing.Handler != spec.Handler:
		// A RuntimeClass's handler cannot change: replace it.
		if err := r.deleteOwnedRuntimeClass(ctx, existing); err != nil {
			return false, "", err
		}
		return r.createRuntimeClass(ctx, shim, spec)
	case upToDate(existing, spec):
		return true, "", nil
	}
	desired := existing.DeepCopy()
	mergeRuntimeClass(desired, spec)
	if err := r.client.Update(ctx, desired, client.FieldOwner(runtimeclass.FieldOwner)); err != nil {
		return false, "", fmt.Errorf("update RuntimeClass %s: %w", spec.Name, err)
	}
	r.event(shim, desired, corev1.EventTypeNormal, "RuntimeClassApplied", "Apply", "RuntimeClass %s for handler %s", spec.Name, spec.Handler)
	return true, "", nil
}

// conflictMessage names the RuntimeClass, the field and who owns it.
func conflictMessage(rc *nodev1.RuntimeClass, spec classSpec) string {
	owner := "it has no controller"
	if ref := metav1.GetControllerOf(rc); ref != nil {
		owner = fmt.Sprintf("its controller is %s %s", ref.Kind, ref.Name)
	}
	return fmt.Sprintf("RuntimeClass %s (%s) exists and does not belong to this Shim (%s): it is left as it is; rename %s or remove that RuntimeClass",
		spec.Name, spec.field, owner, spec.field)
}

func (r *Reconciler) createRuntimeClass(ctx context.Context, shim *v1alpha1.Shim, spec classSpec) (bool, string, error) {
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: spec.Name}, Handler: spec.Handler}
	mergeRuntimeClass(rc, spec)
	err := r.client.Create(ctx, rc, client.FieldOwner(runtimeclass.FieldOwner))
	if apierrors.IsAlreadyExists(err) {
		return false, "", nil // someone was faster: the next reconcile reads whose it is
	}
	if err != nil {
		return false, "", fmt.Errorf("create RuntimeClass %s: %w", spec.Name, err)
	}
	r.event(shim, rc, corev1.EventTypeNormal, "RuntimeClassApplied", "Apply", "RuntimeClass %s for handler %s", spec.Name, spec.Handler)
	return true, "", nil
}

// mergeRuntimeClass sets what the Shim owns of rc: scheduling, its labels
// and its controller reference. Labels and annotations others added stay.
func mergeRuntimeClass(rc *nodev1.RuntimeClass, spec classSpec) {
	if rc.Labels == nil {
		rc.Labels = map[string]string{}
	}
	maps.Copy(rc.Labels, spec.Labels)
	rc.OwnerReferences = slices.DeleteFunc(rc.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == spec.Owner.UID })
	rc.OwnerReferences = append(rc.OwnerReferences, *spec.Owner)
	rc.Scheduling = &nodev1.Scheduling{NodeSelector: spec.NodeSelector, Tolerations: spec.Tolerations}
}

// upToDate: the RuntimeClass has the spec's handler, scheduling and labels.
func upToDate(rc *nodev1.RuntimeClass, spec classSpec) bool {
	for k, v := range spec.Labels {
		if rc.Labels[k] != v {
			return false
		}
	}
	return runtimeclass.UpToDate(rc, spec.Spec)
}

// ownedRuntimeClasses lists the RuntimeClasses the Shim controls.
func (r *Reconciler) ownedRuntimeClasses(ctx context.Context, shim *v1alpha1.Shim) ([]nodev1.RuntimeClass, error) {
	var list nodev1.RuntimeClassList
	if err := r.client.List(ctx, &list, client.MatchingLabels{labelShim: labelValue(shim.Name)}); err != nil {
		return nil, fmt.Errorf("list RuntimeClasses of Shim %s: %w", shim.Name, err)
	}
	return slices.DeleteFunc(list.Items, func(rc nodev1.RuntimeClass) bool { return !ownedBy(&rc, shim) }), nil
}

// deleteStaleRuntimeClasses deletes the RuntimeClasses of handlers the
// spec dropped (or renamed), so that no new pod asks for them.
func (r *Reconciler) deleteStaleRuntimeClasses(ctx context.Context, shim *v1alpha1.Shim, specs []classSpec) error {
	owned, err := r.ownedRuntimeClasses(ctx, shim)
	if err != nil {
		return err
	}
	for i := range owned {
		rc := &owned[i]
		if slices.ContainsFunc(specs, func(s classSpec) bool { return s.Name == rc.Name }) {
			continue
		}
		if err := r.deleteOwnedRuntimeClass(ctx, rc); err != nil {
			return err
		}
		r.event(shim, rc, corev1.EventTypeNormal, "RuntimeClassDeleted", "Delete", "RuntimeClass %s: no longer in the spec", rc.Name)
	}
	return nil
}

// deleteRuntimeClasses deletes every RuntimeClass the Shim owns; one of
// its names that belongs to someone else stays.
func (r *Reconciler) deleteRuntimeClasses(ctx context.Context, obs *observed) error {
	owned, err := r.ownedRuntimeClasses(ctx, obs.shim)
	if err != nil {
		return err
	}
	var errs []error
	for i := range owned {
		errs = append(errs, r.deleteOwnedRuntimeClass(ctx, &owned[i]))
	}
	return errors.Join(errs...)
}

// deleteOwnedRuntimeClass deletes exactly the RuntimeClass that was read
// (its UID a precondition): never one recreated by someone else since.
func (r *Reconciler) deleteOwnedRuntimeClass(ctx context.Context, rc *nodev1.RuntimeClass) error {
	err := r.client.Delete(ctx, rc, client.Preconditions{UID: &rc.UID})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete RuntimeClass %s: %w", rc.Name, err)
	}
	return nil
}
