package shimspec

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// schedulingShim is a Shim named name, created at minute, with the
// scheduling label key ("": none).
func schedulingShim(name string, minute int, key string) v1alpha1.Shim {
	s := crioShim(func(s *v1alpha1.ShimSpec) { s.SchedulingLabel = key })
	s.Name, s.UID = name, types.UID("uid-"+name)
	s.CreationTimestamp = metav1.NewTime(time.Date(2026, 12, 3, 4, minute, 0, 0, time.UTC))
	return *s
}

// TestSchedulingKey: the RuntimeClasses select the scheduling label when
// the Shim has one, its own label otherwise, and the fence keeps to it.
func TestSchedulingKey(t *testing.T) {
	for _, tc := range []struct{ key, want string }{
		{"", "shim.containerd.x-k8s.io/kata"},
		{"example.com/kata", "example.com/kata"},
	} {
		s := schedulingShim("kata", 0, tc.key)
		if got := SchedulingKey(&s); got != tc.want {
			t.Errorf("schedulingLabel %q: SchedulingKey = %q, want %q", tc.key, got, tc.want)
		}
		for _, c := range Classes(&s) {
			if len(c.NodeSelector) != 1 || c.NodeSelector[tc.want] != "installed" {
				t.Errorf("schedulingLabel %q: RuntimeClass %s selects %v, want %s=installed", tc.key, c.Name, c.NodeSelector, tc.want)
			}
		}
	}
}

// TestCheckSchedulingLabel: what the CRD refuses is refused here too
// (an embedder's BuildPlan, an older CRD), naming the field.
func TestCheckSchedulingLabel(t *testing.T) {
	for _, tc := range []struct{ key, want string }{
		{"", ""},
		{"example.com/kata", ""},
		{"karpenter.example/kata-2.x", ""},
		{"kata", "a label key of your own domain is required"},
		{"example.com/-kata", "spec.schedulingLabel"},
		{"example.com/" + strings.Repeat("k", 64), "must be no more than 63"},
		{"shim.containerd.x-k8s.io/kata", "prefix is shimkit's own"},
	} {
		s := schedulingShim("kata", 0, tc.key)
		err := checkSchedulingLabel(&s)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: refused: %v", tc.key, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "spec.schedulingLabel")):
			t.Errorf("%q: %v, want an error naming spec.schedulingLabel with %q", tc.key, err, tc.want)
		}
	}
}

// TestSchedulingRefusal: of two Shims with one scheduling label, the one
// created first keeps it (the earlier name in the same second); the other
// is refused, naming it. A Shim is never refused for its own label.
func TestSchedulingRefusal(t *testing.T) {
	old := schedulingShim("kata", 1, "example.com/kata")
	young := schedulingShim("kata-new", 2, "example.com/kata")
	twin := schedulingShim("a-twin", 1, "example.com/kata")
	other := schedulingShim("spin", 0, "example.com/spin")
	none := schedulingShim("plain", 0, "")
	all := []v1alpha1.Shim{old, young, twin, other, none}
	for _, tc := range []struct {
		shim v1alpha1.Shim
		want string // the Shim named in the refusal; "" none
	}{
		{old, "a-twin"}, // created in the same second, earlier by name
		{twin, ""},
		{young, "a-twin"},
		{other, ""},
		{none, ""},
	} {
		ref := SchedulingRefusal(&tc.shim, all)
		switch {
		case tc.want == "" && ref != nil:
			t.Errorf("%s: refused: %s", tc.shim.Name, ref.Message)
		case tc.want != "" && (ref == nil || ref.Reason != v1alpha1.ReasonInvalidSpec || !strings.Contains(ref.Message, "of Shim "+tc.want+",")):
			t.Errorf("%s: %+v, want InvalidSpec naming Shim %s", tc.shim.Name, ref, tc.want)
		}
	}
	if ref := SchedulingRefusal(&old, []v1alpha1.Shim{old}); ref != nil {
		t.Errorf("a Shim alone with its label: refused: %s", ref.Message)
	}
}
