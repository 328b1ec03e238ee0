package runtimeclass_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/shimkit/shimkit/runtimeclass"
)

// rcmRef is the controller reference runtime-class-manager puts on its
// RuntimeClass (controller-runtime's SetControllerReference).
func rcmRef(apiVersion, kind, name string, uid string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: k8stypes.UID(uid), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

// predecessor is runtime-class-manager's Shim spin, of any UID.
var predecessor = runtimeclass.Predecessor{Group: "runtime.spinkube.dev", Kind: "Shim", Name: "spin"}

// rcmClass creates the RuntimeClass as runtime-class-manager leaves it:
// handler spin, scheduling on its own selector, a label of its name, its
// Shim as the controller, and further references.
func rcmClass(handler string, refs ...metav1.OwnerReference) func(*testing.T, client.Client, string) {
	return func(t *testing.T, c client.Client, name string) {
		t.Helper()
		rc := &nodev1.RuntimeClass{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{name: "true"}, OwnerReferences: refs},
			Handler:    handler,
			Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"spin": "true"}},
		}
		if err := c.Create(context.Background(), rc); err != nil {
			t.Fatal(err)
		}
	}
}

type takeoverCase struct {
	name    string
	prepare func(t *testing.T, c client.Client, name string)
	from    func(p *runtimeclass.Predecessor)
	between interceptor.Funcs
	want    runtimeclass.Result
	wantErr func(error) bool
	check   func(t *testing.T, before, after *nodev1.RuntimeClass)
}

// testTakeover: Takeover hands over exactly the predecessor's
// RuntimeClass with the spec's handler, in place (same UID), and nothing
// else.
func (h *harness) testTakeover(t *testing.T) {
	rcm := rcmRef("runtime.spinkube.dev/v1alpha1", "Shim", "spin", "uid-rcm")
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: "uid-other"}
	takenOver := func(t *testing.T, before, after *nodev1.RuntimeClass) {
		t.Helper()
		if after.UID != before.UID || after.Handler != before.Handler || !runtimeclass.Owned(after, ours.UID) {
			t.Errorf("not taken over in place: %+v", after)
		}
		for _, ref := range after.OwnerReferences {
			if predecessor.Refers(ref) {
				t.Errorf("still refers to the predecessor: %+v", after.OwnerReferences)
			}
		}
		if ref := metav1.GetControllerOf(after); !ptr.Deref(ref.BlockOwnerDeletion, false) {
			t.Errorf("controller reference %+v", ref)
		}
		if !runtimeclass.UpToDate(after, spec(after.Name)) || after.Labels[after.Name] != "true" || !managedBy(after, runtimeclass.FieldOwner) {
			t.Errorf("spec not written, or its own label lost: %+v", after)
		}
	}
	cases := []takeoverCase{{
		name:    "the predecessor's: taken over, in place",
		prepare: rcmClass("spin", rcm),
		want:    runtimeclass.TakenOver,
		check:   takenOver,
	}, {
		name:    "the predecessor's, with its UID: taken over, other references kept",
		prepare: rcmClass("spin", other, rcm),
		from:    func(p *runtimeclass.Predecessor) { p.UID = "uid-rcm" },
		want:    runtimeclass.TakenOver,
		check: func(t *testing.T, before, after *nodev1.RuntimeClass) {
			takenOver(t, before, after)
			if len(after.OwnerReferences) != 2 || after.OwnerReferences[0].UID != other.UID {
				t.Errorf("owner references %+v", after.OwnerReferences)
			}
		},
	}, {
		name:    "the predecessor's at another version of its group: taken over",
		prepare: rcmClass("spin", rcmRef("runtime.spinkube.dev/v1", "Shim", "spin", "uid-rcm")),
		want:    runtimeclass.TakenOver,
		check:   takenOver,
	}, {
		name:    "an earlier object of the predecessor's name (another UID): conflict, untouched",
		prepare: rcmClass("spin", rcm),
		from:    func(p *runtimeclass.Predecessor) { p.UID = "uid-rcm-now" },
		wantErr: conflictWith("Shim spin", "uid-rcm"),
		check:   unchanged,
	}, {
		name:    "the same kind and name in another group: conflict, untouched",
		prepare: rcmClass("spin", rcmRef("runtime.kwasm.sh/v1alpha1", "Shim", "spin", "uid-kwasm")),
		wantErr: conflictWith("Shim spin", "uid-kwasm"),
		check:   unchanged,
	}, {
		name:    "another name: conflict, untouched",
		prepare: rcmClass("spin", rcmRef("runtime.spinkube.dev/v1alpha1", "Shim", "spin-v2", "uid-rcm")),
		wantErr: conflictWith("Shim spin-v2", "uid-rcm"),
		check:   unchanged,
	}, {
		name:    "another kind: conflict, untouched",
		prepare: rcmClass("spin", rcmRef("runtime.spinkube.dev/v1alpha1", "Runtime", "spin", "uid-rcm")),
		wantErr: conflictWith("Runtime spin", "uid-rcm"),
		check:   unchanged,
	}, {
		name:    "the predecessor's with another handler: conflict naming both handlers, untouched",
		prepare: rcmClass("spin-v2", rcm),
		wantErr: func(err error) bool {
			var ce *runtimeclass.ConflictError
			return errors.As(err, &ce) && ce.Handler == "spin-v2" && ce.WantHandler == "spin" && errors.Is(err, runtimeclass.ErrConflict)
		},
		check: unchanged,
	}, {
		name: "the predecessor only as a reference, not the controller: conflict, untouched",
		prepare: rcmClass("spin", metav1.OwnerReference{
			APIVersion: rcm.APIVersion, Kind: rcm.Kind, Name: rcm.Name, UID: rcm.UID,
		}),
		wantErr: conflictWith("", ""),
		check:   unchanged,
	}, {
		name:    "an admin's: conflict, untouched",
		prepare: rcmClass("spin"),
		wantErr: conflictWith("", ""),
		check:   unchanged,
	}, {
		name:  "absent: nothing created",
		want:  runtimeclass.Absent,
		check: gone,
	}, {
		name:    "already the owner's: unchanged",
		prepare: ensured,
		want:    runtimeclass.Unchanged,
		check:   unchanged,
	}, {
		name:    "written by someone else between read and update: retry, not taken over",
		prepare: rcmClass("spin", rcm),
		between: interceptor.Funcs{Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := labelTeam(ctx, c, obj); err != nil {
				return err
			}
			return c.Update(ctx, obj, opts...)
		}},
		want: runtimeclass.Retry,
		check: func(t *testing.T, _, after *nodev1.RuntimeClass) {
			if !predecessor.Controls(after) || after.Labels["team"] != "wasm" {
				t.Errorf("after a lost update %+v", after)
			}
		},
	}, {
		name: "the predecessor's, being deleted: retry, untouched",
		prepare: func(t *testing.T, c client.Client, name string) {
			rcmClass("spin", rcm)(t, c, name)
			edit(t, c, name, func(rc *nodev1.RuntimeClass) { rc.Finalizers = []string{"example.com/hold"} })
			if err := c.Delete(context.Background(), &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
				t.Fatal(err)
			}
		},
		want:  runtimeclass.Retry,
		check: unchanged,
	}, {
		name:    "no predecessor name: refused",
		prepare: rcmClass("spin", rcm),
		from:    func(p *runtimeclass.Predecessor) { p.Name = "" },
		wantErr: func(err error) bool { return err != nil && !errors.Is(err, runtimeclass.ErrConflict) },
		check:   unchanged,
	}}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("takeover-%d", i)
			if tc.prepare != nil {
				tc.prepare(t, h.env.Client, name)
			}
			from := predecessor
			if tc.from != nil {
				tc.from(&from)
			}
			before := h.get(t, name)
			got, err := runtimeclass.Takeover(context.Background(), interceptor.NewClient(h.base, tc.between), spec(name), from)
			checkResult(t, got, err, tc.want, tc.wantErr)
			after := h.get(t, name)
			tc.check(t, before, after)
			if got == runtimeclass.TakenOver {
				// The owner's now: Ensure has nothing to do.
				if res, err := runtimeclass.Ensure(context.Background(), h.env.Client, spec(name)); err != nil || res != runtimeclass.Unchanged {
					t.Errorf("Ensure after the takeover: %s %v", res, err)
				}
			}
		})
	}
}
