package classstep

import (
	"errors"
	"fmt"

	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ErrConflict is wrapped by every error about a RuntimeClass that belongs
// to someone else; check it with errors.Is. Nothing was written.
var ErrConflict = errors.New("RuntimeClass belongs to someone else")

// ConflictError is the error about a RuntimeClass of the spec's
// name that the owner does not control: an admin's (no controller), or
// another controller's (another object, or an earlier owner of the same
// kind and name with another UID). It wraps ErrConflict.
type ConflictError struct {
	// Name is the RuntimeClass's.
	Name string
	// Controller is the RuntimeClass's controller as "Kind name", or empty
	// when it has none.
	Controller string
	// ControllerUID is the controller's UID, or empty.
	ControllerUID types.UID
	// Handler is set by Takeover when the controller is the predecessor
	// but the RuntimeClass's handler (Handler) is not the spec's
	// (WantHandler): it cannot change, and its pods run on it.
	Handler, WantHandler string
}

// NewConflict describes the controller of rc.
func NewConflict(rc *nodev1.RuntimeClass) *ConflictError {
	e := &ConflictError{Name: rc.Name}
	if ref := metav1.GetControllerOf(rc); ref != nil {
		e.Controller, e.ControllerUID = ref.Kind+" "+ref.Name, ref.UID
	}
	return e
}

// Holder says who the RuntimeClass belongs to: "it has no controller" or
// "its controller is Kind name (UID uid)".
func (e *ConflictError) Holder() string {
	if e.Controller == "" {
		return "it has no controller"
	}
	return fmt.Sprintf("its controller is %s (UID %s)", e.Controller, e.ControllerUID)
}

func (e *ConflictError) Error() string {
	if e.WantHandler != "" {
		return fmt.Sprintf("RuntimeClass %s (%s) has handler %s, not %s: it is not taken over, and left as it is", e.Name, e.Holder(), e.Handler, e.WantHandler)
	}
	return fmt.Sprintf("RuntimeClass %s belongs to someone else (%s): it is left as it is", e.Name, e.Holder())
}

// Unwrap makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Unwrap() error { return ErrConflict }
