package classstep

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// FieldOwner is the field manager that shimkit's writes record in
// managedFields.
const FieldOwner = "shimkit"

// Spec is the RuntimeClass to publish.
type Spec struct {
	Name    string
	Handler string
	// NodeSelector restricts the pods to nodes with these labels (the
	// shim's installed label).
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration
	// Labels are added to the RuntimeClass's metadata; labels others set
	// stay.
	Labels map[string]string
	// Owner becomes the RuntimeClass's controller owner reference
	// (Controller is set; BlockOwnerDeletion defaults to true). It is
	// required, with a UID: its UID is what makes the RuntimeClass the
	// owner's.
	Owner *metav1.OwnerReference
}

// Validate checks what a RuntimeClass of the spec needs: a name, a
// handler and an owner UID.
func (s Spec) Validate() error {
	switch {
	case s.Name == "":
		return errors.New("RuntimeClass without a name")
	case s.Handler == "":
		return fmt.Errorf("RuntimeClass %s: no handler", s.Name)
	case s.Owner == nil || s.Owner.UID == "":
		return fmt.Errorf("RuntimeClass %s: Spec.Owner with a UID is required, to record whose RuntimeClass it is", s.Name)
	}
	return nil
}

// Build returns the RuntimeClass created for s.
func Build(s Spec) *nodev1.RuntimeClass {
	rc := &nodev1.RuntimeClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: nodev1.SchemeGroupVersion.String(), Kind: "RuntimeClass"},
		ObjectMeta: metav1.ObjectMeta{Name: s.Name},
		Handler:    s.Handler,
	}
	merge(rc, s)
	return rc
}

// merge sets what s owns of rc: its labels, its controller reference and
// the scheduling. Labels, annotations and owner references others added
// stay. The handler is left alone (it is immutable).
func merge(rc *nodev1.RuntimeClass, s Spec) {
	if len(s.Labels) > 0 {
		if rc.Labels == nil {
			rc.Labels = map[string]string{}
		}
		maps.Copy(rc.Labels, s.Labels)
	}
	if s.Owner != nil {
		ref := controllerRef(*s.Owner)
		rc.OwnerReferences = slices.DeleteFunc(rc.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == ref.UID })
		rc.OwnerReferences = append(rc.OwnerReferences, ref)
	}
	rc.Scheduling = nil
	if len(s.NodeSelector) > 0 || len(s.Tolerations) > 0 {
		rc.Scheduling = &nodev1.Scheduling{NodeSelector: maps.Clone(s.NodeSelector), Tolerations: slices.Clone(s.Tolerations)}
	}
}

// controllerRef makes o a controller reference.
func controllerRef(o metav1.OwnerReference) metav1.OwnerReference {
	o.Controller = ptr.To(true)
	if o.BlockOwnerDeletion == nil {
		o.BlockOwnerDeletion = ptr.To(true)
	}
	return o
}

// Owned reports whether the RuntimeClass's controller reference carries
// the owner's UID. A name is not enough: an owner deleted and recreated
// under the same name does not own its predecessor's RuntimeClass.
func Owned(rc *nodev1.RuntimeClass, owner types.UID) bool {
	ref := metav1.GetControllerOf(rc)
	return owner != "" && ref != nil && ref.UID == owner
}

// UpToDate reports whether an existing RuntimeClass already matches s (its
// handler, scheduling and labels, and s.Owner as its controller when s has
// one), so a caller can skip a request.
func UpToDate(rc *nodev1.RuntimeClass, s Spec) bool {
	if rc.Handler != s.Handler || (s.Owner != nil && !Owned(rc, s.Owner.UID)) {
		return false
	}
	for k, v := range s.Labels {
		if got, ok := rc.Labels[k]; !ok || got != v {
			return false
		}
	}
	var sel map[string]string
	var tol []corev1.Toleration
	if rc.Scheduling != nil {
		sel, tol = rc.Scheduling.NodeSelector, rc.Scheduling.Tolerations
	}
	return maps.Equal(sel, s.NodeSelector) && slices.EqualFunc(tol, s.Tolerations, sameToleration)
}

// sameToleration compares every field of two tolerations.
func sameToleration(a, b corev1.Toleration) bool {
	return a.MatchToleration(&b) && ptr.Equal(a.TolerationSeconds, b.TolerationSeconds)
}
