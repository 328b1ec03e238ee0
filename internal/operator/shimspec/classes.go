package shimspec

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shimkit/shimkit/internal/classstep"
	"github.com/shimkit/shimkit/internal/nodelabel/record"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// Class is one RuntimeClass of a Shim and the spec field that names it.
type Class struct {
	classstep.Spec
	Field string // spec.runtimeClass.name, spec.handlers[1].runtimeClass.name
}

// Classes are the Shim's RuntimeClasses: the primary handler's,
// then one per spec.handlers. All schedule onto the nodes with the Shim's
// one node label (SchedulingKey): the handlers of a Shim are installed and
// removed together, by one installer run per node.
func Classes(shim *v1alpha1.Shim) []Class {
	classes := []v1alpha1.RuntimeClassSpec{shim.Spec.RuntimeClass}
	for _, h := range shim.Spec.Handlers {
		classes = append(classes, h.RuntimeClass)
	}
	out := make([]Class, 0, len(classes))
	for i, rc := range classes {
		s := Class{Spec: classstep.Spec{
			Name:         rc.Name,
			Handler:      rc.HandlerName(),
			NodeSelector: map[string]string{SchedulingKey(shim): record.Installed},
			Labels:       map[string]string{jobview.LabelManagedBy: jobview.ManagedBy, jobview.LabelShim: jobview.LabelValue(shim.Name)},
			Owner:        metav1.NewControllerRef(shim, v1alpha1.GroupVersion.WithKind("Shim")),
		}, Field: "spec.runtimeClass.name"}
		if i > 0 {
			s.Field = fmt.Sprintf("spec.handlers[%d].runtimeClass.name", i-1)
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

// CanaryRuntimeClass names the RuntimeClass of a Shim's canary pods: its
// primary handler without scheduling constraints, as the canary runs on a
// node before it is labelled ("shimkit-canary-<shim>", shortened with a
// hash when too long).
func CanaryRuntimeClass(shim string) string {
	name := "shimkit-canary-" + shim
	if len(name) <= maxName {
		return name
	}
	return jobview.Shorten(name, maxName-jobview.HashLen-1) + "-" + jobview.NameHash(shim)
}

// maxName is the longest name of a cluster-scoped object.
const maxName = 253

// CanaryClass is the canary's RuntimeClass, when the Shim has a
// canary.
func CanaryClass(shim *v1alpha1.Shim) (Class, bool) {
	if !shim.Spec.CanaryEnabled() {
		return Class{}, false
	}
	return Class{Spec: classstep.Spec{
		Name:    CanaryRuntimeClass(shim.Name),
		Handler: shim.Spec.RuntimeClass.HandlerName(),
		Labels:  map[string]string{jobview.LabelManagedBy: jobview.ManagedBy, jobview.LabelShim: jobview.LabelValue(shim.Name)},
		Owner:   metav1.NewControllerRef(shim, v1alpha1.GroupVersion.WithKind("Shim")),
	}, Field: "spec.canary"}, true
}

// OwnedBy reports whether the RuntimeClass belongs to the Shim: its
// controller reference names the Shim's UID (a Shim recreated under the
// same name does not own its predecessor's).
func OwnedBy(rc *nodev1.RuntimeClass, shim *v1alpha1.Shim) bool {
	return classstep.Owned(rc, shim.UID)
}
