package operator_test

import (
	"fmt"
	"testing"
	"time"

	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/runtimeclass"
)

// TestPreviewClasses: the plan's RuntimeClasses are the reconcile's own
// decision (decide.Classes): one runtime-class-manager controls is taken
// over, one the Shim owns that its spec dropped is deleted, one someone
// else holds is a conflict naming its controller, a missing one is
// created.
func TestPreviewClasses(t *testing.T) {
	shim := newShim("spin", "spin", "1", nil)
	shim.UID = "11111111-1111-4111-8111-111111111111"
	shim.Spec.MigrateFrom = &v1alpha1.MigrateFrom{RuntimeClassManager: v1alpha1.RuntimeClassManagerShim{Shim: "spin"}}
	shim.Spec.Handlers = []v1alpha1.HandlerSpec{
		{RuntimeClass: v1alpha1.RuntimeClassSpec{Name: "taken", Handler: "other"}},
		{RuntimeClass: v1alpha1.RuntimeClassSpec{Name: "fresh", Handler: "fresh"}},
	}
	ctrl := true
	dropped := runtimeclass.Build(shimspec.Classes(shim)[0].Spec)
	dropped.Name = "dropped"
	classes := []nodev1.RuntimeClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "spin-rc", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: v1alpha1.RCMGroup + "/v1alpha1", Kind: "Shim", Name: "spin", UID: "rcm", Controller: &ctrl}}}, Handler: "spin"},
		{ObjectMeta: metav1.ObjectMeta{Name: "taken", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "Deployment", Name: "someone", UID: "x", Controller: &ctrl}}}, Handler: "other"},
		*dropped,
	}
	p, err := operator.PreviewRollout(shim, nil, nil, nil, classes, operator.Options{InstallerImage: "i", Namespace: "ns"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(p.Classes)
	want := fmt.Sprint([]operator.ClassPreview{
		{Name: "dropped", Handler: "spin", Action: operator.ClassDelete},
		{Name: "spin-rc", Handler: "spin", Action: operator.ClassTakeOver, Owner: "Shim spin"},
		{Name: "taken", Handler: "other", Action: operator.ClassConflict, Owner: "Deployment someone"},
		{Name: "fresh", Handler: "fresh", Action: operator.ClassCreate},
	})
	if got != want {
		t.Errorf("classes\n got %s\nwant %s", got, want)
	}
}

// A spec not applied yet (no UID) creates its RuntimeClass, and finds one
// of the same name someone else made a conflict.
func TestPreviewClassesOfANewShim(t *testing.T) {
	shim := newShim("spin", "spin", "1", nil)
	ctrl := true
	for _, tc := range []struct {
		classes []nodev1.RuntimeClass
		want    []operator.ClassPreview
	}{
		{nil, []operator.ClassPreview{{Name: "spin-rc", Handler: "spin", Action: operator.ClassCreate}}},
		{[]nodev1.RuntimeClass{{ObjectMeta: metav1.ObjectMeta{Name: "spin-rc", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "Deployment", Name: "someone", UID: "x", Controller: &ctrl}}}, Handler: "spin"}},
			[]operator.ClassPreview{{Name: "spin-rc", Handler: "spin", Action: operator.ClassConflict, Owner: "Deployment someone"}}},
	} {
		p, err := operator.PreviewRollout(shim, nil, nil, nil, tc.classes, operator.Options{InstallerImage: "i", Namespace: "ns"}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if got, want := fmt.Sprint(p.Classes), fmt.Sprint(tc.want); got != want {
			t.Errorf("classes\n got %s\nwant %s", got, want)
		}
		if shim.UID != "" {
			t.Fatal("the preview changed its input")
		}
	}
}
