package runtimeclass_test

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shimkit/shimkit/runtimeclass"
)

// owned is the owner's RuntimeClass as published from spec, at a
// resourceVersion.
func owned(name string) *nodev1.RuntimeClass {
	rc := runtimeclass.Build(spec(name))
	rc.UID, rc.ResourceVersion = "uid-rc", "7"
	return rc
}

// TestDecide: Ensure's and Takeover's decisions on a RuntimeClass as read,
// without a client: what each would write, and that a RuntimeClass of
// someone else is never written.
func TestDecide(t *testing.T) {
	pred := runtimeclass.Predecessor{Group: "runtime.spinkube.dev", Kind: "Shim", Name: "spin"}
	predRef := metav1.OwnerReference{APIVersion: "runtime.spinkube.dev/v1alpha1", Kind: "Shim", Name: "spin", UID: "uid-rcm", Controller: ptr.To(true)}
	stale := owned("wasm")
	stale.Labels = map[string]string{"team": "a"} // another tool's label stays
	stale.Scheduling.NodeSelector = map[string]string{"old": "x"}
	otherHandler := owned("wasm")
	otherHandler.Handler = "spin-v1"
	predecessors := foreign("wasm", predRef)
	predecessors.Handler = "spin"
	going := owned("wasm")
	going.DeletionTimestamp = &metav1.Time{}
	for _, tc := range []struct {
		name     string
		current  *nodev1.RuntimeClass
		create   bool
		takeover bool
		want     runtimeclass.Result
		conflict bool
		write    bool
	}{
		{name: "absent: created", create: true, want: runtimeclass.Created, write: true},
		{name: "absent, no node has the shim yet: left absent", want: runtimeclass.Absent},
		{name: "the owner's, up to date", current: owned("wasm"), create: true, want: runtimeclass.Unchanged},
		{name: "the owner's, out of date: updated", current: stale, create: true, want: runtimeclass.Updated, write: true},
		{name: "the owner's, another handler: replaced", current: otherHandler, create: true, want: runtimeclass.Replaced, write: true},
		{name: "the owner's, being deleted: retry", current: going, create: true, want: runtimeclass.Retry},
		{name: "someone else's: a conflict, nothing written", current: foreign("wasm", theirs), create: true, want: runtimeclass.Unchanged, conflict: true},
		{name: "no one's: a conflict, nothing written", current: foreign("wasm"), create: true, want: runtimeclass.Unchanged, conflict: true},
		{name: "takeover of the predecessor's", current: predecessors, takeover: true, want: runtimeclass.TakenOver, write: true},
		{name: "takeover of the predecessor's with another handler: a conflict", current: foreign("wasm", predRef), takeover: true, want: runtimeclass.Unchanged, conflict: true},
		{name: "takeover of someone else's: a conflict", current: foreign("wasm", theirs), takeover: true, want: runtimeclass.Unchanged, conflict: true},
		{name: "takeover of an absent one: nothing", takeover: true, want: runtimeclass.Absent},
		{name: "takeover of the owner's own: nothing", current: owned("wasm"), takeover: true, want: runtimeclass.Unchanged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var st runtimeclass.Step
			var err error
			if tc.takeover {
				st, err = runtimeclass.DecideTakeover(tc.current, spec("wasm"), pred)
			} else {
				st, err = runtimeclass.Decide(tc.current, spec("wasm"), tc.create)
			}
			if conflict := errors.Is(err, runtimeclass.ErrConflict); conflict != tc.conflict || err != nil && !conflict {
				t.Fatalf("error %v, want a conflict: %v", err, tc.conflict)
			}
			if st.Result != tc.want || (st.Write != nil) != tc.write {
				t.Fatalf("step %s (writes: %v), want %s (writes: %v)", st.Result, st.Write != nil, tc.want, tc.write)
			}
			if w := st.Write; w != nil {
				if !runtimeclass.Owned(w, ours.UID) || !runtimeclass.UpToDate(w, spec("wasm")) {
					t.Errorf("writes a RuntimeClass that is not the owner's as specified: %+v", w)
				}
				if tc.current != nil && st.Result != runtimeclass.Replaced && w.ResourceVersion != tc.current.ResourceVersion {
					t.Errorf("an update without the resourceVersion read: %q, read %q", w.ResourceVersion, tc.current.ResourceVersion)
				}
				if tc.current != nil && tc.current.Labels["team"] != "" && w.Labels["team"] != tc.current.Labels["team"] {
					t.Errorf("another tool's label is lost: %v", w.Labels)
				}
			}
		})
	}
}

// FuzzDecide: whatever the RuntimeClass read (whose owner references,
// handler, labels, deletion), Decide and DecideTakeover write only the
// owner's RuntimeClass or the predecessor's, never one of anyone else, and
// what they write is the owner's, as specified.
func FuzzDecide(f *testing.F) {
	f.Add(uint8(0), "spin", true, false)
	f.Add(uint8(1), "spin-v1", true, true)
	f.Add(uint8(2), "spin", false, false)
	f.Add(uint8(3), "spin", true, true)
	f.Fuzz(func(t *testing.T, who uint8, handler string, create, takeover bool) {
		pred := runtimeclass.Predecessor{Group: "runtime.spinkube.dev", Kind: "Shim", Name: "spin"}
		refs := [][]metav1.OwnerReference{
			nil,
			{{APIVersion: ours.APIVersion, Kind: ours.Kind, Name: ours.Name, UID: ours.UID, Controller: ptr.To(true)}},
			{theirs},
			{{APIVersion: "runtime.spinkube.dev/v1alpha1", Kind: "Shim", Name: "spin", UID: "uid-rcm", Controller: ptr.To(true)}},
			{{APIVersion: ours.APIVersion, Kind: ours.Kind, Name: ours.Name, UID: ours.UID}}, // not the controller
		}[int(who)%5]
		var current *nodev1.RuntimeClass
		if who%7 != 6 {
			current = &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "wasm", UID: "uid-rc", ResourceVersion: "3", OwnerReferences: refs}, Handler: handler}
			if who&0x80 != 0 {
				current.DeletionTimestamp = &metav1.Time{}
			}
			if who&0x40 != 0 {
				current.Scheduling = &nodev1.Scheduling{Tolerations: []corev1.Toleration{{Key: "x"}}}
			}
		}
		var st runtimeclass.Step
		var err error
		if takeover {
			st, err = runtimeclass.DecideTakeover(current, spec("wasm"), pred)
		} else {
			st, err = runtimeclass.Decide(current, spec("wasm"), create)
		}
		if st.Write == nil {
			return
		}
		if err != nil {
			t.Fatalf("a write with an error: %v", err)
		}
		if current != nil && !runtimeclass.Owned(current, ours.UID) && !(takeover && pred.Controls(current)) {
			t.Fatalf("writes over someone else's RuntimeClass %+v", current.OwnerReferences)
		}
		if current != nil && current.DeletionTimestamp != nil && st.Result != runtimeclass.Replaced {
			t.Fatalf("writes a RuntimeClass being deleted")
		}
		if !runtimeclass.Owned(st.Write, ours.UID) || !runtimeclass.UpToDate(st.Write, spec("wasm")) {
			t.Fatalf("writes %+v, not the owner's as specified", st.Write)
		}
	})
}
