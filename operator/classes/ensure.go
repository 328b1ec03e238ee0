package classes

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/operator/decide"
	"github.com/shimkit/shimkit/operator/shimspec"
	"github.com/shimkit/shimkit/runtimeclass"
)

// Result is what Ensure found: whether every RuntimeClass is published,
// and the messages of those that belong to someone else.
type Result struct {
	Published bool
	Conflicts []string
	// CanaryBlocked: the canary's RuntimeClass belongs to someone else, so
	// no installer can run its canary.
	CanaryBlocked bool
}

// Ensure creates the Shim's RuntimeClasses once the first
// node has the shim, keeps those it owns up to date, and deletes those it
// owns that the spec no longer names. A RuntimeClass of one of its names
// that it does not own is left as it is: a conflict.
//
// The canary's RuntimeClass (shimspec.CanaryClass) is published only while an
// installer may run the canary: when starting says this reconcile starts
// an install, or while a node has the shim or a Job is changing it. Any
// other time (a refused spec, a rollout halted before any node had the
// shim, no node targeted) no node will run a canary, and the Shim's own
// canary RuntimeClass is deleted, one from before included; one that
// belongs to someone else is then not looked at (it blocks, as a
// conflict, only a rollout that is about to start).
func (r *Classes) Ensure(ctx context.Context, obs *decide.Snapshot, starting bool) (Result, error) {
	anyInstalled, anyTouched := false, false
	for _, v := range obs.Views {
		anyInstalled = anyInstalled || v.Label == nodelabel.Installed
		// A node whose image has the shim runs no installer, so no canary.
		anyTouched = anyTouched || !v.Preinstalled && v.Touched() || v.Held
	}
	specs := shimspec.Classes(obs.Shim)
	canary, withCanary := shimspec.CanaryClass(obs.Shim)
	if withCanary && (starting || anyTouched) {
		specs = append(specs, canary)
	}
	// A canary RuntimeClass no installer will use goes as a handler
	// dropped from the spec does.
	if err := r.deleteStaleRuntimeClasses(ctx, r.classesOf(obs), obs.Shim, specs); err != nil {
		return Result{}, err
	}
	out := Result{Published: true}
	for _, spec := range specs {
		ok, conflict, err := r.ensureRuntimeClass(ctx, r.classesOf(obs), obs.Shim, spec, anyInstalled || spec.Field == canary.Field)
		if err != nil {
			return Result{}, err
		}
		if msg := obs.Takeover[spec.Name]; conflict != "" && msg != "" {
			conflict = msg // the migration's predecessor's: say why it was not taken over
		}
		out.Published = out.Published && ok
		if conflict != "" {
			out.Conflicts = append(out.Conflicts, conflict)
			out.CanaryBlocked = out.CanaryBlocked || withCanary && spec.Field == canary.Field
		}
	}
	return out, nil
}

// ensureRuntimeClass publishes the RuntimeClass with runtimeclass.Ensure
// on the reconcile's snapshot (readClasses): created when it is absent
// (once a node has the shim), updated or replaced when it is the Shim's
// and out of date, and never written when it belongs to someone else. It
// reports whether it is published, or why it belongs to someone else. A
// RuntimeClass that changed since the snapshot (runtimeclass.Retry) is not
// published yet: the watch on RuntimeClasses brings the next reconcile,
// which reads whose it is.
func (r *Classes) ensureRuntimeClass(ctx context.Context, classes *classSnapshot, shim *v1alpha1.Shim, spec shimspec.Class, anyInstalled bool) (bool, string, error) {
	ensure := runtimeclass.Ensure
	if !anyInstalled {
		ensure = runtimeclass.UpdateExisting // not yet created: no node has the shim
	}
	res, err := ensure(ctx, classes, spec.Spec)
	var conflict *runtimeclass.ConflictError
	switch {
	case errors.As(err, &conflict):
		msg := conflictMessage(conflict, spec)
		r.event(shim, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: conflict.Name}}, corev1.EventTypeWarning, v1alpha1.ReasonRuntimeClassConflict, "Apply", "%s", msg)
		return false, msg, nil
	case err != nil:
		return false, "", err
	}
	switch res {
	case runtimeclass.Created, runtimeclass.Updated, runtimeclass.Replaced:
		r.event(shim, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: spec.Name}}, corev1.EventTypeNormal, "RuntimeClassApplied", "Apply", "RuntimeClass %s for handler %s", spec.Name, spec.Handler)
		return true, "", nil
	case runtimeclass.Unchanged:
		return true, "", nil
	}
	return false, "", nil // Absent, Retry
}

// conflictMessage names the RuntimeClass, the field and who owns it.
func conflictMessage(c *runtimeclass.ConflictError, spec shimspec.Class) string {
	if spec.Field == "spec.canary" {
		return fmt.Sprintf("RuntimeClass %s (the canary's) exists and does not belong to this Shim (%s): no node is installed until it is removed (or spec.canary.enabled is false)", c.Name, c.Holder())
	}
	return fmt.Sprintf("RuntimeClass %s (%s) exists and does not belong to this Shim (%s): it is left as it is; rename %s or remove that RuntimeClass",
		c.Name, spec.Field, c.Holder(), spec.Field)
}

// deleteStaleRuntimeClasses deletes the RuntimeClasses of handlers the
// spec dropped (or renamed), so that no new pod asks for them. Each is
// deleted only if it is still the Shim's as read (runtimeclass.DeleteOwned):
// never one recreated by someone else since.
func (r *Classes) deleteStaleRuntimeClasses(ctx context.Context, classes *classSnapshot, shim *v1alpha1.Shim, specs []shimspec.Class) error {
	for _, rc := range classes.set.Owned(shim) {
		if slices.ContainsFunc(specs, func(s shimspec.Class) bool { return s.Name == rc.Name }) {
			continue
		}
		if err := runtimeclass.DeleteOwned(ctx, classes, rc.Name, shim.UID); err != nil {
			return err
		}
		why := "no longer in the spec"
		if rc.Name == shimspec.CanaryRuntimeClass(shim.Name) {
			why = "no node is being installed or has the shim (the canary's RuntimeClass is published only while one is)"
		}
		r.event(shim, rc, corev1.EventTypeNormal, "RuntimeClassDeleted", "Delete", "RuntimeClass %s: %s", rc.Name, why)
	}
	return nil
}

// DeleteAll deletes every RuntimeClass the Shim owns; one of
// its names that belongs to someone else stays.
func (r *Classes) DeleteAll(ctx context.Context, obs *decide.Snapshot) error {
	var errs []error
	for _, rc := range obs.Classes.Owned(obs.Shim) {
		errs = append(errs, runtimeclass.DeleteOwned(ctx, r.classesOf(obs), rc.Name, obs.Shim.UID))
	}
	return errors.Join(errs...)
}
