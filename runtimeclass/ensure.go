package runtimeclass

import (
	"context"
	"fmt"

	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/classstep"
)

// Result is what Ensure did.
type Result = classstep.Result

const (
	// Unchanged: the owner's RuntimeClass already matched the spec; nothing
	// was written. (Also the Result that comes with an error.)
	Unchanged = classstep.Unchanged
	// Created: the RuntimeClass was absent and is now created.
	Created = classstep.Created
	// Updated: the owner's RuntimeClass was out of date and is updated.
	Updated = classstep.Updated
	// Replaced: the owner's RuntimeClass had another handler (immutable),
	// so it was deleted and created anew.
	Replaced = classstep.Replaced
	// Absent: UpdateExisting found no RuntimeClass and created none.
	Absent = classstep.Absent
	// Retry: the RuntimeClass changed between the read and the write
	// (someone created the name first, or replaced or is deleting the
	// owner's), so nothing more was written. It is not an error: Ensure
	// again (a watch on RuntimeClasses will ask for it) to see whose it is
	// now, which may well be a conflict.
	Retry = classstep.Retry
)

// Ensure publishes the RuntimeClass of s, never one that someone else
// wrote:
//
//   - absent, it is created with s.Owner as its controller (Created); if
//     the name is taken meanwhile, Retry;
//   - controlled by s.Owner's UID, it is updated to s when out of date,
//     with the resourceVersion just read (Updated, or Unchanged), or, for
//     another handler, deleted with UID and resourceVersion preconditions
//     and created anew (Replaced). Labels, annotations and owner references
//     others added stay. One being deleted is Retry;
//   - otherwise (no controller, or another one), nothing is written and the
//     error is a *ConflictError (errors.Is(err, ErrConflict)).
//
// s.Owner with a UID is required. An Update that loses to a concurrent
// write returns the API's Conflict error (apierrors.IsConflict), as
// client.Update does: requeue.
func Ensure(ctx context.Context, c client.Client, s Spec) (Result, error) {
	return ensure(ctx, c, s, true)
}

// UpdateExisting is Ensure without the create: an absent RuntimeClass stays
// absent (Absent). An operator uses it to keep its RuntimeClass up to date
// before any node has the shim, when creating one would only make pods
// wait for nodes that cannot run them.
func UpdateExisting(ctx context.Context, c client.Client, s Spec) (Result, error) {
	return ensure(ctx, c, s, false)
}

func ensure(ctx context.Context, c client.Client, s Spec, create bool) (Result, error) {
	if err := s.Validate(); err != nil {
		return Unchanged, err
	}
	current, err := read(ctx, c, s.Name)
	if err != nil {
		return Unchanged, err
	}
	st, err := Decide(current, s, create)
	if err != nil {
		return st.Result, err
	}
	return Apply(ctx, c, st)
}

// createNew creates rc; a name taken meanwhile is Retry.
func createNew(ctx context.Context, c client.Client, rc *nodev1.RuntimeClass, done Result) (Result, error) {
	err := c.Create(ctx, rc, client.FieldOwner(FieldOwner))
	switch {
	case apierrors.IsAlreadyExists(err):
		return Retry, nil
	case err != nil:
		return Unchanged, fmt.Errorf("create RuntimeClass %s: %w", rc.Name, err)
	}
	return done, nil
}

// deleteAsRead deletes rc only if it is still the object that was read:
// its UID and resourceVersion are preconditions (a failed one is the API's
// Conflict).
func deleteAsRead(ctx context.Context, c client.Client, rc *nodev1.RuntimeClass) error {
	uid, rv := rc.UID, rc.ResourceVersion
	return c.Delete(ctx, rc, client.Preconditions{UID: &uid, ResourceVersion: &rv})
}

// DeleteOwned deletes the RuntimeClass name if, and only if, its controller
// reference carries the owner's UID, with the UID and resourceVersion it
// read as preconditions. It returns nil, and deletes nothing, when the
// RuntimeClass is absent, belongs to someone else, or was replaced by
// someone else's after it was read. The owner's, changed after it was read,
// is an error (retry).
func DeleteOwned(ctx context.Context, c client.Client, name string, owner types.UID) error {
	if owner == "" {
		return fmt.Errorf("delete RuntimeClass %s: no owner UID", name)
	}
	rc, err := getOwned(ctx, c, name, owner)
	if rc == nil || err != nil {
		return err
	}
	err = deleteAsRead(ctx, c, rc)
	switch {
	case err == nil || apierrors.IsNotFound(err):
		return nil
	case !apierrors.IsConflict(err):
		return fmt.Errorf("delete RuntimeClass %s: %w", name, err)
	}
	// It changed after the read: replaced by someone else's, it stays.
	if rc, rerr := getOwned(ctx, c, name, owner); rc == nil || rerr != nil {
		return rerr
	}
	return fmt.Errorf("delete RuntimeClass %s: it changed while being deleted, retry: %w", name, err)
}

// getOwned reads the RuntimeClass: nil when it is absent or not the
// owner's.
func getOwned(ctx context.Context, c client.Client, name string, owner types.UID) (*nodev1.RuntimeClass, error) {
	rc := &nodev1.RuntimeClass{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, rc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get RuntimeClass %s: %w", name, err)
	}
	if !Owned(rc, owner) {
		return nil, nil
	}
	return rc, nil
}
