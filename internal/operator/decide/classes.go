package decide

import (
	"maps"
	"slices"

	nodev1 "k8s.io/api/node/v1"

	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// ClassSet is the RuntimeClasses a reconcile read, by name (nil: read
// and absent). The snapshot's is read only; carrying out a plan writes
// into a Clone of it, so that a later step sees an earlier one's write (a
// takeover, then the update of the class taken over).
type ClassSet struct {
	byName map[string]*nodev1.RuntimeClass
}

// Clone returns a set of the same RuntimeClasses that can be written
// without changing s.
func (s *ClassSet) Clone() *ClassSet {
	if s == nil {
		return &ClassSet{}
	}
	return &ClassSet{byName: maps.Clone(s.byName)}
}

// Read returns the RuntimeClass of name: nil when absent; read is false
// when the reconcile did not read that name.
func (s *ClassSet) Read(name string) (rc *nodev1.RuntimeClass, read bool) {
	rc, read = s.byName[name]
	return rc, read
}

// Put records the RuntimeClass of name as read or written (nil: absent).
func (s *ClassSet) Put(name string, rc *nodev1.RuntimeClass) {
	if s.byName == nil {
		s.byName = map[string]*nodev1.RuntimeClass{}
	}
	s.byName[name] = rc
}

// All are the RuntimeClasses of the set, by name (the absent left out).
func (s *ClassSet) All() []*nodev1.RuntimeClass {
	var out []*nodev1.RuntimeClass
	for _, name := range slices.Sorted(maps.Keys(s.byName)) {
		if rc := s.byName[name]; rc != nil {
			out = append(out, rc)
		}
	}
	return out
}

func sortedNames(m map[string]*nodev1.RuntimeClass) []string {
	return slices.Sorted(maps.Keys(m))
}

// Owned are the RuntimeClasses of the set the Shim controls, by name.
func (s *ClassSet) Owned(shim *v1alpha1.Shim) []*nodev1.RuntimeClass {
	var out []*nodev1.RuntimeClass
	for _, name := range slices.Sorted(maps.Keys(s.byName)) {
		if rc := s.byName[name]; rc != nil && shimspec.OwnedBy(rc, shim) {
			out = append(out, rc)
		}
	}
	return out
}
