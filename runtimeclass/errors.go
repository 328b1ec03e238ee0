package runtimeclass

import "github.com/shimkit/shimkit/internal/classstep"

// ErrConflict is wrapped by every error about a RuntimeClass that belongs
// to someone else; check it with errors.Is. Nothing was written.
var ErrConflict = classstep.ErrConflict

// ConflictError is returned by Ensure for a RuntimeClass of the spec's
// name that the owner does not control: an admin's (no controller), or
// another controller's (another object, or an earlier owner of the same
// kind and name with another UID). It wraps ErrConflict. Name is the
// RuntimeClass's; Controller its controller as "Kind name" (empty: none)
// and ControllerUID that controller's UID; Handler and WantHandler are set
// by Takeover when the controller is the predecessor but the
// RuntimeClass's handler is not the spec's (it cannot change, and its pods
// run on it). Holder says who the RuntimeClass belongs to.
type ConflictError = classstep.ConflictError
