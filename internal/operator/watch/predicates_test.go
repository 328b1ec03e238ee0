package watch

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestWatchPredicates: the watches pass what a reconcile acts on and not
// the echoes of its own writes.
func TestWatchPredicates(t *testing.T) {
	now := metav1.Now()
	shim := func(gen int64, mutate func(*v1alpha1.Shim)) client.Object {
		s := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "spin", Generation: gen}}
		if mutate != nil {
			mutate(s)
		}
		return s
	}
	job := func(done bool, owners int) client.Object {
		j := &batchv1.Job{}
		for range owners {
			j.OwnerReferences = append(j.OwnerReferences, metav1.OwnerReference{Name: "s"})
		}
		if done {
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
		}
		return j
	}
	node := func(labels map[string]string, tainted bool) client.Object {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: labels}}
		if tainted {
			n.Spec.Taints = []corev1.Taint{{Key: nodeview.PendingTaint, Effect: corev1.TaintEffectNoSchedule}}
		}
		return n
	}
	booted := func(boot, heartbeat string) client.Object {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{
			NodeInfo:   corev1.NodeSystemInfo{BootID: boot},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Message: heartbeat}}}}
	}
	ours := map[string]string{"pool": "a", "shim.containerd.x-k8s.io/spin": "installed"}
	recorded := func(n client.Object) client.Object {
		n.SetAnnotations(map[string]string{"verified.shim.containerd.x-k8s.io/spin": `{"shimUID":"u1"}`})
		return n
	}
	for _, tc := range []struct {
		name     string
		p        predicate.Predicate
		old, new client.Object
		want     bool
	}{
		{"spec changed", ShimChanged(), shim(1, nil), shim(2, nil), true},
		{"status written", ShimChanged(), shim(1, nil), shim(1, func(s *v1alpha1.Shim) { s.Status.ObservedGeneration = 1 }), false},
		{"retry requested", ShimChanged(), shim(1, nil), shim(1, func(s *v1alpha1.Shim) { s.Annotations = map[string]string{"r": "x"} }), true},
		{"deleted", ShimChanged(), shim(1, nil), shim(1, func(s *v1alpha1.Shim) { s.DeletionTimestamp = &now }), true},
		{"Job finished", JobChanged(), job(false, 1), job(true, 1), true},
		{"Job progress", JobChanged(), job(false, 1), job(false, 1), false},
		{"selector label", ForeignLabelChanged(), node(map[string]string{"pool": "a"}, false), node(map[string]string{"pool": "b"}, false), true},
		{"shimkit's own label", ForeignLabelChanged(), node(map[string]string{"pool": "a"}, false), node(ours, false), false},
		{"shimkit's own label on a tainted node", ForeignLabelChanged(), node(map[string]string{"pool": "a"}, true), node(ours, true), true},
		{"a record written on a tainted node whose label was declared", ForeignLabelChanged(), node(ours, true), recorded(node(ours, true)), true},
		{"a record written on an untainted node", ForeignLabelChanged(), node(ours, false), recorded(node(ours, false)), false},
		{"booted again", NodeInfoChanged(), booted("b1", "up"), booted("b2", "up"), true},
		{"a heartbeat", NodeInfoChanged(), booted("b1", "up"), booted("b1", "still up"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
				t.Errorf("Update = %v, want %v", got, tc.want)
			}
		})
	}
	if !JobChanged().Create(event.CreateEvent{Object: job(false, 2)}) || JobChanged().Create(event.CreateEvent{Object: job(false, 1)}) {
		t.Error("a batch Job's creation passes, a Job of one Shim's does not")
	}
}
