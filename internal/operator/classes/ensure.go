package classes

import (
	"context"
	"errors"

	nodev1 "k8s.io/api/node/v1"

	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/runtimeclass"
)

// Publish writes the plan's deletions, then its classes to publish
// (decide.Classes), each with the preconditions of what was read
// (runtimeclass.Apply, DeleteOwned): a class changed since the snapshot is
// not overwritten (conflict: the plan's status, which counts it
// published, is not written; the watch on RuntimeClasses brings the next
// reconcile, which reads it again). Each write and each conflict the plan
// found is told in an Event.
func (r *Classes) Publish(ctx context.Context, shim *v1alpha1.Shim, set *decide.ClassSet, p decide.ClassPlan) (conflict bool, _ error) {
	for _, d := range p.Deletes {
		if err := runtimeclass.DeleteOwned(ctx, r.classesOf(set), d.Class.Name, shim.UID); err != nil {
			return false, err
		}
		r.recorder.Say(ctx, shim, d.Said)
	}
	for _, w := range p.Warnings {
		r.recorder.Say(ctx, shim, w)
	}
	for _, e := range p.Ensures {
		res, err := runtimeclass.Apply(ctx, r.client, e.Step)
		if err != nil {
			return conflict, err
		}
		switch res {
		case runtimeclass.Created, runtimeclass.Updated, runtimeclass.Replaced:
			set.Put(e.Spec.Name, e.Step.Write)
			r.recorder.Say(ctx, shim, e.Said)
		case runtimeclass.Retry:
			conflict = true
		}
	}
	return conflict, nil
}

// Fence writes a deleted Shim's fenced RuntimeClasses (decide.ClassFences:
// they select no node; the pods admitted keep theirs), each with the
// preconditions of what was read: one changed since is fenced by the next
// reconcile. Each is told in an Event.
func (r *Classes) Fence(ctx context.Context, shim *v1alpha1.Shim, set *decide.ClassSet, p decide.ClassPlan) error {
	for _, e := range p.Ensures {
		res, err := runtimeclass.Apply(ctx, r.client, e.Step)
		if err != nil {
			return err
		}
		if res == runtimeclass.Updated {
			set.Put(e.Spec.Name, e.Step.Write)
			r.recorder.Say(ctx, shim, e.Said)
		}
	}
	return nil
}

// DeleteAll deletes the RuntimeClasses the Shim owns, as the plan read
// them (decide.Plan.Delete); one that belongs to someone else by then
// stays.
func (r *Classes) DeleteAll(ctx context.Context, shim *v1alpha1.Shim, set *decide.ClassSet, owned []*nodev1.RuntimeClass) error {
	var errs []error
	for _, rc := range owned {
		errs = append(errs, runtimeclass.DeleteOwned(ctx, r.classesOf(set), rc.Name, shim.UID))
	}
	return errors.Join(errs...)
}
