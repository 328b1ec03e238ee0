package runtimeclass

import (
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shimkit/shimkit/internal/classstep"
)

// FieldOwner is the field manager that shimkit's writes record in
// managedFields.
const FieldOwner = classstep.FieldOwner

// Spec is the RuntimeClass to publish: its Name and Handler; NodeSelector
// restricts its pods to nodes with these labels (the shim's installed
// label), with Tolerations; Labels are added to its metadata (labels
// others set stay); Owner becomes its controller owner reference
// (Controller is set; BlockOwnerDeletion defaults to true) and is
// required, with a UID: its UID is what makes the RuntimeClass the
// owner's. Spec.Validate checks them.
type Spec = classstep.Spec

// Build returns the RuntimeClass that Ensure creates for s.
func Build(s Spec) *nodev1.RuntimeClass { return classstep.Build(s) }

// Owned reports whether the RuntimeClass's controller reference carries
// the owner's UID. A name is not enough: an owner deleted and recreated
// under the same name does not own its predecessor's RuntimeClass.
func Owned(rc *nodev1.RuntimeClass, owner types.UID) bool { return classstep.Owned(rc, owner) }

// UpToDate reports whether an existing RuntimeClass already matches s (its
// handler, scheduling and labels, and s.Owner as its controller when s has
// one), so a caller can skip a request.
func UpToDate(rc *nodev1.RuntimeClass, s Spec) bool { return classstep.UpToDate(rc, s) }
