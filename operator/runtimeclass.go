package operator

import (
	"context"
	"errors"
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

// runtimeClassSpecs are the Shim's RuntimeClasses: the primary handler's,
// then one per spec.handlers. All schedule onto the nodes with the Shim's
// one node label: the handlers of a Shim are installed and removed
// together, by one installer run per node.
func runtimeClassSpecs(shim *v1alpha1.Shim) []runtimeclass.Spec {
	classes := []v1alpha1.RuntimeClassSpec{shim.Spec.RuntimeClass}
	for _, h := range shim.Spec.Handlers {
		classes = append(classes, h.RuntimeClass)
	}
	out := make([]runtimeclass.Spec, 0, len(classes))
	for _, rc := range classes {
		s := runtimeclass.Spec{
			Name:         rc.Name,
			Handler:      rc.Handler,
			NodeSelector: map[string]string{nodelabel.Key(shim.Name): nodelabel.Installed},
			Labels:       map[string]string{labelManagedBy: managedBy, labelShim: shim.Name},
			Owner:        metav1.NewControllerRef(shim, v1alpha1.GroupVersion.WithKind("Shim")),
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

// ensureRuntimeClasses applies the Shim's RuntimeClasses once the first
// node has the shim (and keeps them up to date), and deletes those it owns
// that the spec no longer names. It reports whether all are published.
func (r *Reconciler) ensureRuntimeClasses(ctx context.Context, obs *observed) (bool, error) {
	anyInstalled := false
	for _, v := range obs.views {
		anyInstalled = anyInstalled || v.label == nodelabel.Installed
	}
	specs := runtimeClassSpecs(obs.shim)
	if err := r.deleteStaleRuntimeClasses(ctx, obs.shim, specs); err != nil {
		return false, err
	}
	published := true
	for _, spec := range specs {
		ok, err := r.ensureRuntimeClass(ctx, obs.shim, spec, anyInstalled)
		if err != nil {
			return false, err
		}
		published = published && ok
	}
	return published, nil
}

func (r *Reconciler) ensureRuntimeClass(ctx context.Context, shim *v1alpha1.Shim, spec runtimeclass.Spec, anyInstalled bool) (bool, error) {
	existing := &nodev1.RuntimeClass{}
	err := r.client.Get(ctx, client.ObjectKey{Name: spec.Name}, existing)
	switch {
	case err == nil && runtimeclass.UpToDate(existing, spec):
		return true, nil
	case err != nil && !apierrors.IsNotFound(err):
		return false, err
	case err != nil && !anyInstalled:
		return false, nil // not yet: no node has the shim
	case err == nil && existing.Handler != spec.Handler && metav1.IsControlledBy(existing, shim):
		// A RuntimeClass's handler cannot change: replace it.
		if err := runtimeclass.Delete(ctx, r.client, spec.Name); err != nil {
			return false, err
		}
	}
	if err := runtimeclass.Apply(ctx, r.client, spec); err != nil {
		return false, err
	}
	r.event(shim, corev1.EventTypeNormal, "RuntimeClassApplied", "Apply", "RuntimeClass %s for handler %s", spec.Name, spec.Handler)
	return true, nil
}

// ownedRuntimeClasses lists the RuntimeClasses the Shim controls.
func (r *Reconciler) ownedRuntimeClasses(ctx context.Context, shim *v1alpha1.Shim) ([]string, error) {
	var list nodev1.RuntimeClassList
	if err := r.client.List(ctx, &list, client.MatchingLabels{labelShim: shim.Name}); err != nil {
		return nil, err
	}
	var names []string
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], shim) {
			names = append(names, list.Items[i].Name)
		}
	}
	return names, nil
}

// deleteStaleRuntimeClasses deletes the RuntimeClasses of handlers the
// spec dropped (or renamed), so that no new pod asks for them.
func (r *Reconciler) deleteStaleRuntimeClasses(ctx context.Context, shim *v1alpha1.Shim, specs []runtimeclass.Spec) error {
	owned, err := r.ownedRuntimeClasses(ctx, shim)
	if err != nil {
		return err
	}
	for _, name := range owned {
		if slices.ContainsFunc(specs, func(s runtimeclass.Spec) bool { return s.Name == name }) {
			continue
		}
		if err := runtimeclass.Delete(ctx, r.client, name); err != nil {
			return err
		}
		r.event(shim, corev1.EventTypeNormal, "RuntimeClassDeleted", "Delete", "RuntimeClass %s: no longer in the spec", name)
	}
	return nil
}

// deleteRuntimeClasses deletes every RuntimeClass of the Shim.
func (r *Reconciler) deleteRuntimeClasses(ctx context.Context, obs *observed) error {
	owned, err := r.ownedRuntimeClasses(ctx, obs.shim)
	if err != nil {
		return err
	}
	for _, s := range runtimeClassSpecs(obs.shim) {
		if !slices.Contains(owned, s.Name) {
			owned = append(owned, s.Name)
		}
	}
	var errs []error
	for _, name := range owned {
		errs = append(errs, runtimeclass.Delete(ctx, r.client, name))
	}
	return errors.Join(errs...)
}
