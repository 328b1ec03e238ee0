package classstep

import (
	"fmt"
	"slices"

	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Result is what a step did (or, with nothing to write, decided).
type Result string

const (
	// Unchanged: the owner's RuntimeClass already matched the spec; nothing
	// was written. (Also the Result that comes with an error.)
	Unchanged Result = "Unchanged"
	// Created: the RuntimeClass was absent and is now created.
	Created Result = "Created"
	// Updated: the owner's RuntimeClass was out of date and is updated.
	Updated Result = "Updated"
	// Replaced: the owner's RuntimeClass had another handler (immutable),
	// so it was deleted and created anew.
	Replaced Result = "Replaced"
	// Absent: UpdateExisting found no RuntimeClass and created none.
	Absent Result = "Absent"
	// Retry: the RuntimeClass changed between the read and the write
	// (someone created the name first, or replaced or is deleting the
	// owner's), so nothing more was written. It is not an error: Ensure
	// again (a watch on RuntimeClasses will ask for it) to see whose it is
	// now, which may well be a conflict.
	Retry Result = "Retry"
)

// TakenOver: Takeover made Spec.Owner the controller of a RuntimeClass
// that was the predecessor's, and wrote the spec onto it.
const TakenOver Result = "TakenOver"

// Predecessor is the controller a RuntimeClass is taken over from: the
// API group (of any version), kind and name of an object, and its UID when
// it is known. It names one object, not a pattern: every field but UID is
// required.
type Predecessor struct {
	Group string
	Kind  string
	Name  string
	// UID, when set, must be the controller reference's too; empty
	// matches any UID (the object could not be read, or is gone).
	UID types.UID
}

// String names the predecessor: "Shim.runtime.spinkube.dev spin-v2".
func (p Predecessor) String() string {
	return schema.GroupKind{Group: p.Group, Kind: p.Kind}.String() + " " + p.Name
}

// Refers reports whether ref names the predecessor: its apiVersion's
// group, its kind and its name, and its UID when p has one.
func (p Predecessor) Refers(ref metav1.OwnerReference) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == p.Group && ref.Kind == p.Kind && ref.Name == p.Name && (p.UID == "" || ref.UID == p.UID)
}

// Controls reports whether the RuntimeClass's controller reference names
// the predecessor.
func (p Predecessor) Controls(rc *nodev1.RuntimeClass) bool {
	ref := metav1.GetControllerOf(rc)
	return ref != nil && p.Refers(*ref)
}

// Validate checks that p names one object.
func (p Predecessor) Validate() error {
	if p.Group == "" || p.Kind == "" || p.Name == "" {
		return fmt.Errorf("takeover predecessor %+v: group, kind and name are required", p)
	}
	return nil
}

// Step is what Decide or DecideTakeover decided for one RuntimeClass as
// read, for Apply to write: Result is its outcome once written (Created,
// Updated, Replaced, TakenOver) or, with nothing to write, the decision's
// (Unchanged, Absent, Retry).
type Step struct {
	Result Result
	// Read is the RuntimeClass as read (nil: absent); Write what Apply
	// writes (nil: nothing): created (Created, and after deleting Read,
	// Replaced) or updated with Read's resourceVersion (Updated,
	// TakenOver).
	Read, Write *nodev1.RuntimeClass
	// From is the predecessor of a takeover (for Apply's error).
	From Predecessor
}

// Decide is Ensure's decision (UpdateExisting's when create is false) on
// current, the RuntimeClass s.Name as read (nil: absent), without a
// client: absent, it is created (or left Absent); the owner's, updated,
// replaced for another handler, or Unchanged; the owner's being deleted,
// Retry; anyone else's, a *ConflictError and nothing to write.
func Decide(current *nodev1.RuntimeClass, s Spec, create bool) (Step, error) {
	if err := s.Validate(); err != nil {
		return Step{Result: Unchanged}, err
	}
	st := Step{Read: current}
	switch {
	case current == nil && !create:
		st.Result = Absent
	case current == nil:
		st.Result, st.Write = Created, Build(s)
	case !Owned(current, s.Owner.UID):
		return Step{Result: Unchanged, Read: current}, NewConflict(current)
	case current.DeletionTimestamp != nil:
		st.Result = Retry // the owner's, going away: once gone, created
	case current.Handler != s.Handler:
		st.Result, st.Write = Replaced, Build(s)
	case UpToDate(current, s):
		st.Result = Unchanged
	default:
		st.Result, st.Write = Updated, current.DeepCopy()
		merge(st.Write, s)
	}
	return st, nil
}

// DecideTakeover is Takeover's decision on current (nil: absent), without
// a client: absent, Absent; already s.Owner's, Unchanged; controlled by
// from with s.Handler, TakenOver (every owner reference to from replaced
// by s.Owner's, the spec written on it), or Retry when it is being
// deleted; controlled by from with another handler, or by anyone else, or
// by no one, a *ConflictError and nothing to write.
func DecideTakeover(current *nodev1.RuntimeClass, s Spec, from Predecessor) (Step, error) {
	if err := s.Validate(); err != nil {
		return Step{Result: Unchanged}, err
	}
	if err := from.Validate(); err != nil {
		return Step{Result: Unchanged}, err
	}
	st := Step{Read: current, From: from}
	switch {
	case current == nil:
		st.Result = Absent
	case Owned(current, s.Owner.UID):
		st.Result = Unchanged
	case !from.Controls(current):
		return Step{Result: Unchanged, Read: current}, NewConflict(current)
	case current.Handler != s.Handler:
		e := NewConflict(current)
		e.Handler, e.WantHandler = current.Handler, s.Handler
		return Step{Result: Unchanged, Read: current}, e
	case current.DeletionTimestamp != nil:
		st.Result = Retry // going away: Ensure creates it anew
	default:
		st.Result, st.Write = TakenOver, current.DeepCopy()
		st.Write.OwnerReferences = slices.DeleteFunc(st.Write.OwnerReferences, from.Refers)
		merge(st.Write, s)
	}
	return st, nil
}
