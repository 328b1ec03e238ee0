package runtimeclass

import (
	"context"
	"fmt"

	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

func (p Predecessor) validate() error {
	if p.Group == "" || p.Kind == "" || p.Name == "" {
		return fmt.Errorf("takeover predecessor %+v: group, kind and name are required", p)
	}
	return nil
}

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
	if err := s.validate(); err != nil {
		return Unchanged, err
	}
	if err := from.validate(); err != nil {
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
