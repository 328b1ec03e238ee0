package operator

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/runtimeclass"
)

func runtimeClassSpec(shim *v1alpha1.Shim) runtimeclass.Spec {
	s := runtimeclass.Spec{
		Name:         shim.Spec.RuntimeClass.Name,
		Handler:      shim.Spec.RuntimeClass.Handler,
		NodeSelector: map[string]string{nodelabel.Key(shim.Name): nodelabel.Installed},
		Labels:       map[string]string{labelManagedBy: managedBy, labelShim: shim.Name},
		Owner:        metav1.NewControllerRef(shim, v1alpha1.GroupVersion.WithKind("Shim")),
	}
	for _, t := range shim.Spec.RuntimeClass.Tolerations {
		s.Tolerations = append(s.Tolerations, corev1.Toleration{
			Key: t.Key, Operator: corev1.TolerationOperator(t.Operator), Value: t.Value,
			Effect: corev1.TaintEffect(t.Effect), TolerationSeconds: t.TolerationSeconds,
		})
	}
	return s
}

// ensureRuntimeClass applies the RuntimeClass once the first node has the
// shim (and keeps it up to date). It reports whether it is published.
func (r *Reconciler) ensureRuntimeClass(ctx context.Context, obs *observed) (bool, error) {
	anyInstalled := false
	for _, v := range obs.views {
		anyInstalled = anyInstalled || v.label == nodelabel.Installed
	}
	spec := runtimeClassSpec(obs.shim)
	existing := &nodev1.RuntimeClass{}
	err := r.client.Get(ctx, client.ObjectKey{Name: spec.Name}, existing)
	switch {
	case err == nil && runtimeclass.UpToDate(existing, spec):
		return true, nil
	case err != nil && !apierrors.IsNotFound(err):
		return false, err
	case err != nil && !anyInstalled:
		return false, nil // not yet: no node has the shim
	}
	if err := runtimeclass.Apply(ctx, r.client, spec); err != nil {
		return false, err
	}
	r.event(obs.shim, corev1.EventTypeNormal, "RuntimeClassApplied", "Apply", "RuntimeClass %s for handler %s", spec.Name, spec.Handler)
	return true, nil
}

func (r *Reconciler) deleteRuntimeClass(ctx context.Context, obs *observed) error {
	return runtimeclass.Delete(ctx, r.client, obs.shim.Spec.RuntimeClass.Name)
}
