package runtimeclass_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/runtimeclass"
)

// The owner that publishes, and another owner of the same kind and name
// but another UID (an earlier object recreated under that name, say).
var (
	ours   = metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "WasmRuntime", Name: "spin", UID: "uid-ours"}
	theirs = metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "WasmRuntime", Name: "spin", UID: "uid-theirs",
		Controller: ptr.To(true)}
)

// spec is the owner's RuntimeClass name.
func spec(name string) runtimeclass.Spec {
	return runtimeclass.Spec{
		Name: name, Handler: "spin",
		NodeSelector: map[string]string{nodelabel.Key("spin"): nodelabel.Installed},
		Labels:       map[string]string{"app.kubernetes.io/managed-by": "example"},
		Owner:        ptr.To(ours),
	}
}

// foreign is a RuntimeClass someone else wrote: an admin's (no owner
// references) or, with refs, another controller's.
func foreign(name string, refs ...metav1.OwnerReference) *nodev1.RuntimeClass {
	return &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"team": "platform"}, OwnerReferences: refs},
		Handler:    "their-handler",
		Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"pool": "theirs"}},
	}
}

// TestOwnership runs Ensure and DeleteOwned against a real API server:
// they write the owner's RuntimeClass and never one someone else wrote,
// even when someone else writes it between the read and the write.
func TestOwnership(t *testing.T) {
	env := testutil.StartEnv(t)
	// A client that can be intercepted, to act between a read and a write.
	base, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{env: env, base: base}
	t.Run("Ensure", h.testEnsure)
	t.Run("DeleteOwned", h.testDeleteOwned)
	t.Run("Takeover", h.testTakeover)
}

type harness struct {
	env  *testutil.Env
	base client.WithWatch
}

// ensureCase is one call of Ensure (or UpdateExisting) on a RuntimeClass
// in the state prepare leaves it in.
type ensureCase struct {
	name    string
	prepare func(t *testing.T, c client.Client, name string)
	spec    func(s *runtimeclass.Spec) // changes the owner's spec
	between interceptor.Funcs          // what someone else does between read and write
	update  bool                       // UpdateExisting instead of Ensure
	want    runtimeclass.Result
	wantErr func(error) bool
	// check compares the RuntimeClass before and after the call (nil when
	// absent).
	check func(t *testing.T, before, after *nodev1.RuntimeClass)
}

func (h *harness) testEnsure(t *testing.T) {
	cases := []ensureCase{{
		name: "absent: created",
		want: runtimeclass.Created,
		check: func(t *testing.T, _, after *nodev1.RuntimeClass) {
			s := spec(after.Name)
			if !runtimeclass.UpToDate(after, s) || !runtimeclass.Owned(after, ours.UID) {
				t.Errorf("created %+v", after)
			}
			if ref := metav1.GetControllerOf(after); !ptr.Deref(ref.BlockOwnerDeletion, false) {
				t.Errorf("controller reference %+v", ref)
			}
			if !managedBy(after, runtimeclass.FieldOwner) {
				t.Errorf("managedFields lack %s: %+v", runtimeclass.FieldOwner, after.ManagedFields)
			}
		},
	}, {
		name:    "own, up to date: unchanged",
		prepare: ensured,
		want:    runtimeclass.Unchanged,
		check:   unchanged,
	}, {
		name: "own, out of date: updated, what others added kept",
		prepare: func(t *testing.T, c client.Client, name string) {
			ensured(t, c, name)
			edit(t, c, name, func(rc *nodev1.RuntimeClass) {
				rc.Labels["team"] = "wasm"
				rc.Annotations = map[string]string{"note": "kept"}
				rc.OwnerReferences = append(rc.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: "uid-other"})
			})
		},
		spec: func(s *runtimeclass.Spec) {
			s.Tolerations = []corev1.Toleration{{Key: "wasm", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
		},
		want: runtimeclass.Updated,
		check: func(t *testing.T, before, after *nodev1.RuntimeClass) {
			if len(after.Scheduling.Tolerations) != 1 || after.UID != before.UID || !runtimeclass.Owned(after, ours.UID) {
				t.Errorf("updated %+v", after)
			}
			if after.Labels["team"] != "wasm" || after.Annotations["note"] != "kept" || len(after.OwnerReferences) != 2 {
				t.Errorf("what others added is lost: %+v", after.ObjectMeta)
			}
		},
	}, {
		name:    "own, tolerationSeconds changed: updated",
		prepare: ensured,
		spec: func(s *runtimeclass.Spec) {
			s.Tolerations = []corev1.Toleration{{Key: "wasm", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](30)}}
		},
		want: runtimeclass.Updated,
	}, {
		name:    "admin's (no controller): conflict, untouched",
		prepare: created(),
		wantErr: conflictWith("", ""),
		check:   unchanged,
	}, {
		name:    "another owner's: conflict, untouched",
		prepare: created(theirs),
		wantErr: conflictWith("WasmRuntime spin", theirs.UID),
		check:   unchanged,
	}, {
		name:    "a reference to the owner that is not the controller: conflict, untouched",
		prepare: created(ours), // Controller unset
		wantErr: conflictWith("", ""),
		check:   unchanged,
	}, {
		name:    "own, handler changed: replaced",
		prepare: ensured,
		spec:    func(s *runtimeclass.Spec) { s.Handler = "spin-v2" },
		want:    runtimeclass.Replaced,
		check: func(t *testing.T, before, after *nodev1.RuntimeClass) {
			if after.UID == before.UID || after.Handler != "spin-v2" || !runtimeclass.Owned(after, ours.UID) {
				t.Errorf("replaced %+v by %+v", before, after)
			}
		},
	}, {
		name: "name taken between read and create: retry, theirs untouched",
		between: interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := c.Create(ctx, foreign(obj.GetName())); err != nil {
				return err
			}
			return c.Create(ctx, obj, opts...)
		}},
		want:  runtimeclass.Retry,
		check: isForeign,
	}, {
		name:    "own replaced by someone else's between read and delete (handler change): retry, theirs untouched",
		prepare: ensured,
		spec:    func(s *runtimeclass.Spec) { s.Handler = "spin-v2" },
		between: interceptor.Funcs{Delete: recreateForeign},
		want:    runtimeclass.Retry,
		check:   isForeign,
	}, {
		name:    "own, written by someone else between read and update: the API's conflict",
		prepare: ensured,
		spec:    func(s *runtimeclass.Spec) { s.NodeSelector = map[string]string{"pool": "wasm"} },
		between: interceptor.Funcs{Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := labelTeam(ctx, c, obj); err != nil {
				return err
			}
			return c.Update(ctx, obj, opts...)
		}},
		wantErr: apierrors.IsConflict,
		check: func(t *testing.T, _, after *nodev1.RuntimeClass) {
			if after.Labels["team"] != "wasm" || after.Scheduling.NodeSelector["pool"] == "wasm" {
				t.Errorf("after a lost update %+v", after)
			}
		},
	}, {
		name: "own, being deleted: retry",
		prepare: func(t *testing.T, c client.Client, name string) {
			ensured(t, c, name)
			edit(t, c, name, func(rc *nodev1.RuntimeClass) { rc.Finalizers = []string{"example.com/hold"} })
			if err := c.Delete(context.Background(), &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
				t.Fatal(err)
			}
		},
		spec:  func(s *runtimeclass.Spec) { s.Handler = "spin-v2" },
		want:  runtimeclass.Retry,
		check: unchanged,
	}, {
		name:   "UpdateExisting, absent: nothing created",
		update: true,
		want:   runtimeclass.Absent,
	}, {
		name:    "UpdateExisting, own: updated",
		prepare: ensured,
		spec:    func(s *runtimeclass.Spec) { s.NodeSelector = map[string]string{"pool": "wasm"} },
		update:  true,
		want:    runtimeclass.Updated,
	}, {
		name:    "no owner: refused, nothing created",
		spec:    func(s *runtimeclass.Spec) { s.Owner = nil },
		wantErr: func(err error) bool { return err != nil && !errors.Is(err, runtimeclass.ErrConflict) },
	}}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			name := fmt.Sprintf("ensure-%d", i)
			if tc.prepare != nil {
				tc.prepare(t, h.env.Client, name)
			}
			s := spec(name)
			if tc.spec != nil {
				tc.spec(&s)
			}
			before := h.get(t, name)
			c := interceptor.NewClient(h.base, tc.between)
			do := runtimeclass.Ensure
			if tc.update {
				do = runtimeclass.UpdateExisting
			}
			got, err := do(ctx, c, s)
			checkResult(t, got, err, tc.want, tc.wantErr)
			after := h.get(t, name)
			switch {
			case tc.check != nil:
				tc.check(t, before, after)
			case tc.want == runtimeclass.Absent || tc.wantErr != nil:
				if after != nil {
					t.Errorf("created %+v", after)
				}
			default:
				if !runtimeclass.UpToDate(after, s) {
					t.Errorf("not up to date: %+v", after)
				}
			}
		})
	}
}

// deleteCase is one call of DeleteOwned on a RuntimeClass in the state
// prepare leaves it in.
type deleteCase struct {
	name    string
	prepare func(t *testing.T, c client.Client, name string)
	owner   string
	between interceptor.Funcs
	wantErr bool
	check   func(t *testing.T, before, after *nodev1.RuntimeClass)
}

func (h *harness) testDeleteOwned(t *testing.T) {
	cases := []deleteCase{{
		name:    "own: deleted",
		prepare: ensured,
		check:   gone,
	}, {
		name:  "absent: nothing to do",
		check: gone,
	}, {
		name:    "admin's: kept",
		prepare: created(),
		check:   unchanged,
	}, {
		name:    "another owner's: kept",
		prepare: created(theirs),
		check:   unchanged,
	}, {
		name:    "own, recreated by someone else between read and delete: theirs kept",
		prepare: ensured,
		between: interceptor.Funcs{Delete: recreateForeign},
		check:   isForeign,
	}, {
		name:    "own, edited between read and delete: retry, kept",
		prepare: ensured,
		between: interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if err := labelTeam(ctx, c, obj); err != nil {
				return err
			}
			return c.Delete(ctx, obj, opts...)
		}},
		wantErr: true,
		check: func(t *testing.T, _, after *nodev1.RuntimeClass) {
			if after == nil || !runtimeclass.Owned(after, ours.UID) {
				t.Errorf("after %+v", after)
			}
		},
	}, {
		name:    "no owner UID: refused",
		prepare: ensured,
		owner:   "-",
		wantErr: true,
		check:   unchanged,
	}}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("delete-%d", i)
			if tc.prepare != nil {
				tc.prepare(t, h.env.Client, name)
			}
			owner := ours.UID
			if tc.owner == "-" {
				owner = ""
			}
			before := h.get(t, name)
			err := runtimeclass.DeleteOwned(context.Background(), interceptor.NewClient(h.base, tc.between), name, owner)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %t", err, tc.wantErr)
			}
			if tc.wantErr && errors.Is(err, runtimeclass.ErrConflict) {
				t.Errorf("a conflict: %v", err)
			}
			tc.check(t, before, h.get(t, name))
		})
	}
}

// get reads the RuntimeClass; nil when it is absent.
func (h *harness) get(t *testing.T, name string) *nodev1.RuntimeClass {
	t.Helper()
	rc := &nodev1.RuntimeClass{}
	err := h.env.Client.Get(context.Background(), client.ObjectKey{Name: name}, rc)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

// ensured publishes the owner's RuntimeClass.
func ensured(t *testing.T, c client.Client, name string) {
	t.Helper()
	if res, err := runtimeclass.Ensure(context.Background(), c, spec(name)); err != nil || res != runtimeclass.Created {
		t.Fatalf("ensure %s: %s %v", name, res, err)
	}
}

// created returns a prepare that creates someone else's RuntimeClass with
// these owner references.
func created(refs ...metav1.OwnerReference) func(*testing.T, client.Client, string) {
	return func(t *testing.T, c client.Client, name string) {
		t.Helper()
		if err := c.Create(context.Background(), foreign(name, refs...)); err != nil {
			t.Fatal(err)
		}
	}
}

// edit is someone else's update of the RuntimeClass.
func edit(t *testing.T, c client.Client, name string, f func(*nodev1.RuntimeClass)) {
	t.Helper()
	rc := &nodev1.RuntimeClass{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, rc); err != nil {
		t.Fatal(err)
	}
	f(rc)
	if err := c.Update(context.Background(), rc); err != nil {
		t.Fatal(err)
	}
}

// recreateForeign, between the read and the delete, deletes the RuntimeClass
// and creates an admin's of the same name; then the delete goes on.
func recreateForeign(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
	if err := c.Delete(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: obj.GetName()}}); err != nil {
		return err
	}
	if err := c.Create(ctx, foreign(obj.GetName())); err != nil {
		return err
	}
	return c.Delete(ctx, obj, opts...)
}

// conflictWith matches a *ConflictError naming the controller.
func conflictWith(controller string, uid any) func(error) bool {
	return func(err error) bool {
		var ce *runtimeclass.ConflictError
		return errors.Is(err, runtimeclass.ErrConflict) && errors.As(err, &ce) &&
			ce.Controller == controller && fmt.Sprint(ce.ControllerUID) == fmt.Sprint(uid)
	}
}

// unchanged: the whole object, resourceVersion included, is as it was.
func unchanged(t *testing.T, before, after *nodev1.RuntimeClass) {
	t.Helper()
	if !equality.Semantic.DeepEqual(before, after) {
		t.Errorf("changed:\nbefore %+v\n after %+v", before, after)
	}
}

// isForeign: the RuntimeClass there is the admin's.
func isForeign(t *testing.T, _, after *nodev1.RuntimeClass) {
	t.Helper()
	if after == nil || after.Handler != "their-handler" || len(after.OwnerReferences) != 0 || after.Labels["team"] != "platform" {
		t.Errorf("not the admin's: %+v", after)
	}
}

func gone(t *testing.T, _, after *nodev1.RuntimeClass) {
	t.Helper()
	if after != nil {
		t.Errorf("still there: %+v", after)
	}
}

func managedBy(rc *nodev1.RuntimeClass, manager string) bool {
	for _, m := range rc.ManagedFields {
		if m.Manager == manager {
			return true
		}
	}
	return false
}

// labelTeam is another writer: it labels the RuntimeClass obj names
// between shimkit's read and its write.
func labelTeam(ctx context.Context, c client.WithWatch, obj client.Object) error {
	fresh := &nodev1.RuntimeClass{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), fresh); err != nil {
		return err
	}
	fresh.Labels["team"] = "wasm"
	return c.Update(ctx, fresh)
}

// checkResult checks what Ensure, UpdateExisting or Takeover returned:
// the error wantErr accepts, or no error and the result want.
func checkResult(t *testing.T, got runtimeclass.Result, err error, want runtimeclass.Result, wantErr func(error) bool) {
	t.Helper()
	switch {
	case wantErr != nil && !wantErr(err):
		t.Fatalf("error %v", err)
	case wantErr == nil && err != nil:
		t.Fatal(err)
	case wantErr == nil && got != want:
		t.Errorf("result %s, want %s", got, want)
	}
}
