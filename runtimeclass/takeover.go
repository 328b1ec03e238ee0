package runtimeclass

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/classstep"
)

// TakenOver: Takeover made Spec.Owner the controller of a RuntimeClass
// that was the predecessor's, and wrote the spec onto it.
const TakenOver = classstep.TakenOver

// Predecessor is the controller a RuntimeClass is taken over from: the
// API group (of any version), kind and name of an object, and its UID when
// it is known (UID, when set, must be the controller reference's too;
// empty matches any UID: the object could not be read, or is gone). It
// names one object, not a pattern: every field but UID is required.
type Predecessor = classstep.Predecessor

// Takeover hands the RuntimeClass s.Name over from its controller, the
// predecessor, to s.Owner, and writes s onto it, with one Update that
// carries the resourceVersion just read: every owner reference to the
// predecessor is replaced by s.Owner's controller reference; labels,
// annotations and other owner references stay; the handler is kept and
// must be s.Handler (it is immutable, and the pods that use the
// RuntimeClass run on it). Once taken over, the RuntimeClass is s.Owner's
// for Ensure and DeleteOwned, and deleting the predecessor no longer
// deletes it.
//
//   - absent: nothing is written (Absent; Ensure creates it);
//   - already s.Owner's: Unchanged (Ensure keeps it up to date);
//   - controlled by from, with s.Handler: TakenOver. Being deleted, or
//     changed between the read and the write: Retry;
//   - controlled by from with another handler, or by anyone else, or by no
//     one: nothing is written and the error is a *ConflictError (for the
//     handler, with Handler set).
func Takeover(ctx context.Context, c client.Client, s Spec, from Predecessor) (Result, error) {
	if err := s.Validate(); err != nil {
		return Unchanged, err
	}
	if err := from.Validate(); err != nil {
		return Unchanged, err
	}
	current, err := read(ctx, c, s.Name)
	if err != nil {
		return Unchanged, err
	}
	st, err := DecideTakeover(current, s, from)
	if err != nil {
		return st.Result, err
	}
	return Apply(ctx, c, st)
}
