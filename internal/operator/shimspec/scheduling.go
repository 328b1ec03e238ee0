package shimspec

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/shimkit/shimkit/internal/nodelabel/record"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// SchedulingKey is the node label the Shim's RuntimeClasses select:
// spec.schedulingLabel, or the Shim's own label (record.Key) when it has
// none.
func SchedulingKey(shim *v1alpha1.Shim) string {
	if shim.Spec.SchedulingLabel != "" {
		return shim.Spec.SchedulingLabel
	}
	return record.Key(shim.Name)
}

// checkSchedulingLabel refuses a spec.schedulingLabel that is no label
// key with a domain, or in shimkit's own domain (the CRD's rules say the
// same; an embedder's BuildPlan and an older CRD are checked here).
func checkSchedulingLabel(shim *v1alpha1.Shim) error {
	key := shim.Spec.SchedulingLabel
	if key == "" {
		return nil
	}
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return fmt.Errorf("spec.schedulingLabel: %q: %s", key, strings.Join(errs, "; "))
	}
	if !strings.Contains(key, "/") {
		return fmt.Errorf("spec.schedulingLabel: %q: a label key of your own domain is required (example.com/%s)", key, key)
	}
	if strings.HasPrefix(key, record.Prefix) {
		return fmt.Errorf("spec.schedulingLabel: %q: the %s prefix is shimkit's own; use a domain of yours", key, record.Prefix)
	}
	return nil
}

// SchedulingRefusal refuses a Shim whose spec.schedulingLabel another
// Shim of shims has that was created before it (the earlier name first,
// when created in the same second), naming the first created: two Shims
// writing one label would send pods of either RuntimeClass to nodes that
// have only the other's handler. Nil when the label is the Shim's alone,
// or it has none.
func SchedulingRefusal(shim *v1alpha1.Shim, shims []v1alpha1.Shim) *Refusal {
	key := shim.Spec.SchedulingLabel
	if key == "" {
		return nil
	}
	holder := shim // the first created of those with the label
	for i := range shims {
		if o := &shims[i]; o.UID != shim.UID && o.Spec.SchedulingLabel == key && before(o, holder) {
			holder = o
		}
	}
	if holder == shim {
		return nil
	}
	return &Refusal{Reason: v1alpha1.ReasonInvalidSpec, Message: fmt.Sprintf(
		"spec.schedulingLabel: %s is the scheduling label of Shim %s, created before this one: each Shim needs a label of its own (the pods of either RuntimeClass would go to nodes that have only the other's handler)",
		key, holder.Name)}
}

// before orders Shims by creation, then by name.
func before(a, b *v1alpha1.Shim) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}
