package runtimeclass

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	nodev1ac "k8s.io/client-go/applyconfigurations/node/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldOwner is the server-side apply field manager of shimkit.
const FieldOwner = "shimkit"

// Spec is the RuntimeClass to publish.
type Spec struct {
	Name    string
	Handler string
	// NodeSelector restricts the pods to nodes with these labels (the
	// shim's installed label).
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration
	// Labels are added to the RuntimeClass's metadata.
	Labels map[string]string
	// Owner, when set, becomes the controller owner reference.
	Owner *metav1.OwnerReference
}

// Build returns the apply configuration of the RuntimeClass.
func Build(s Spec) *nodev1ac.RuntimeClassApplyConfiguration {
	rc := nodev1ac.RuntimeClass(s.Name).WithHandler(s.Handler)
	if len(s.Labels) > 0 {
		rc.WithLabels(s.Labels)
	}
	if s.Owner != nil {
		o := s.Owner
		rc.WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion(o.APIVersion).WithKind(o.Kind).WithName(o.Name).WithUID(o.UID).
			WithController(true).WithBlockOwnerDeletion(true))
	}
	sched := nodev1ac.Scheduling()
	if len(s.NodeSelector) > 0 {
		sched.WithNodeSelector(s.NodeSelector)
	}
	for _, t := range s.Tolerations {
		tac := corev1ac.Toleration().WithKey(t.Key).WithOperator(t.Operator).WithValue(t.Value).WithEffect(t.Effect)
		if t.TolerationSeconds != nil {
			tac.WithTolerationSeconds(*t.TolerationSeconds)
		}
		sched.WithTolerations(tac)
	}
	if len(s.NodeSelector) > 0 || len(s.Tolerations) > 0 {
		rc.WithScheduling(sched)
	}
	return rc
}

// Apply creates or updates the RuntimeClass with server-side apply.
func Apply(ctx context.Context, c client.Client, s Spec) error {
	if err := c.Apply(ctx, Build(s), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply RuntimeClass %s: %w", s.Name, err)
	}
	return nil
}

// Delete deletes the RuntimeClass; one that is already gone is fine.
func Delete(ctx context.Context, c client.Client, name string) error {
	rc := &nodev1.RuntimeClass{}
	rc.Name = name
	if err := c.Delete(ctx, rc); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete RuntimeClass %s: %w", name, err)
	}
	return nil
}

// UpToDate reports whether an existing RuntimeClass already matches s, so a
// caller can skip a request.
func UpToDate(rc *nodev1.RuntimeClass, s Spec) bool {
	if rc.Handler != s.Handler {
		return false
	}
	var sel map[string]string
	var tol []corev1.Toleration
	if rc.Scheduling != nil {
		sel, tol = rc.Scheduling.NodeSelector, rc.Scheduling.Tolerations
	}
	return maps.Equal(sel, s.NodeSelector) && slices.EqualFunc(tol, s.Tolerations, func(a, b corev1.Toleration) bool { return a.MatchToleration(&b) && a.Value == b.Value })
}
