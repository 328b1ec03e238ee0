package runtimeclass

import (
	"context"
	"fmt"

	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/classstep"
)

// Step is what Decide or DecideTakeover decided for one RuntimeClass as
// read, for Apply to write: Result is its outcome once written (Created,
// Updated, Replaced, TakenOver) or, with nothing to write, the decision's
// (Unchanged, Absent, Retry); Read is the RuntimeClass as read (nil:
// absent), Write what Apply writes (nil: nothing): created (Created, and
// after deleting Read, Replaced) or updated with Read's resourceVersion
// (Updated, TakenOver); From the predecessor of a takeover.
type Step = classstep.Step

// Decide is Ensure's decision (UpdateExisting's when create is false) on
// current, the RuntimeClass s.Name as read (nil: absent), without a
// client: absent, it is created (or left Absent); the owner's, updated,
// replaced for another handler, or Unchanged; the owner's being deleted,
// Retry; anyone else's, a *ConflictError and nothing to write.
func Decide(current *nodev1.RuntimeClass, s Spec, create bool) (Step, error) {
	return classstep.Decide(current, s, create)
}

// DecideTakeover is Takeover's decision on current (nil: absent), without
// a client: absent, Absent; already s.Owner's, Unchanged; controlled by
// from with s.Handler, TakenOver (every owner reference to from replaced
// by s.Owner's, the spec written on it), or Retry when it is being
// deleted; controlled by from with another handler, or by anyone else, or
// by no one, a *ConflictError and nothing to write.
func DecideTakeover(current *nodev1.RuntimeClass, s Spec, from Predecessor) (Step, error) {
	return classstep.DecideTakeover(current, s, from)
}

// Apply writes the step with the preconditions of what was read: an
// Update carries Read's resourceVersion, a replacement deletes Read by its
// UID and resourceVersion first, a create fails on a name taken. A
// RuntimeClass that changed since it was read is not overwritten: Retry
// (a takeover's or a replacement's), or the API's Conflict error (an
// update's, as client.Update returns it). It returns the outcome.
func Apply(ctx context.Context, c client.Client, st Step) (Result, error) {
	if st.Write == nil {
		return st.Result, nil
	}
	switch st.Result {
	case Created:
		return createNew(ctx, c, st.Write, Created)
	case Replaced:
		err := deleteAsRead(ctx, c, st.Read)
		switch {
		case apierrors.IsConflict(err):
			return Retry, nil // no longer what was read: nothing deleted
		case err != nil && !apierrors.IsNotFound(err):
			return Unchanged, fmt.Errorf("replace RuntimeClass %s (handler %s to %s): %w", st.Read.Name, st.Read.Handler, st.Write.Handler, err)
		}
		return createNew(ctx, c, st.Write, Replaced)
	case Updated:
		if err := c.Update(ctx, st.Write, client.FieldOwner(FieldOwner)); err != nil {
			return Unchanged, fmt.Errorf("update RuntimeClass %s: %w", st.Write.Name, err)
		}
		return Updated, nil
	case TakenOver:
		err := c.Update(ctx, st.Write, client.FieldOwner(FieldOwner))
		switch {
		case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
			return Retry, nil // no longer what was read: read again
		case err != nil:
			return Unchanged, fmt.Errorf("take over RuntimeClass %s from %s: %w", st.Write.Name, st.From, err)
		}
		return TakenOver, nil
	}
	return Unchanged, fmt.Errorf("RuntimeClass %s: nothing to write for %s", st.Write.Name, st.Result)
}

// read reads the RuntimeClass name (nil: absent).
func read(ctx context.Context, c client.Client, name string) (*nodev1.RuntimeClass, error) {
	rc := &nodev1.RuntimeClass{}
	err := c.Get(ctx, client.ObjectKey{Name: name}, rc)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get RuntimeClass %s: %w", name, err)
	}
	return rc, nil
}
