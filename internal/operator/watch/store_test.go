package watch

import (
	"context"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestStoreHandler: the store records every event, including those its
// predicate keeps from the reconciler, before the reconciler is asked, and
// hands out the cache's own objects.
func TestStoreHandler(t *testing.T) {
	ctx := context.Background()
	s := NewStore[*batchv1.Job]()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	var seenAtEnqueue []int // how many objects the store had when each event was passed on
	next := handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			seenAtEnqueue = append(seenAtEnqueue, len(s.List(func(*batchv1.Job) bool { return true })))
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			seenAtEnqueue = append(seenAtEnqueue, len(s.List(func(*batchv1.Job) bool { return true })))
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			seenAtEnqueue = append(seenAtEnqueue, len(s.List(func(*batchv1.Job) bool { return true })))
		},
	}
	// Only Jobs named "pass-…" reach the reconciler.
	pass := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName()[:4] == "pass" })
	h := s.Handler(next, pass)
	job := func(name, rv string) *batchv1.Job {
		return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
	}

	a1, b1 := job("pass-a", "1"), job("drop-b", "1")
	h.Create(ctx, event.CreateEvent{Object: a1}, q)
	h.Create(ctx, event.CreateEvent{Object: b1}, q)
	b2 := job("drop-b", "2")
	h.Update(ctx, event.UpdateEvent{ObjectOld: b1, ObjectNew: b2}, q)
	a2 := job("pass-a", "2")
	h.Update(ctx, event.UpdateEvent{ObjectOld: a1, ObjectNew: a2}, q)

	got := s.List(func(*batchv1.Job) bool { return true })
	slices.SortFunc(got, func(x, y *batchv1.Job) int { return strings.Compare(x.Name, y.Name) })
	if len(got) != 2 || got[0] != b2 || got[1] != a2 {
		t.Fatalf("store holds %v, want the newest objects themselves (drop-b@2, pass-a@2)", names(got))
	}
	if want := []int{1, 2}; !slices.Equal(seenAtEnqueue, want) {
		t.Errorf("objects in the store when pass-a's events were passed on: %v, want %v", seenAtEnqueue, want)
	}

	h.Delete(ctx, event.DeleteEvent{Object: b2}, q)
	h.Delete(ctx, event.DeleteEvent{Object: a2}, q)
	if got := s.List(func(*batchv1.Job) bool { return true }); len(got) != 0 {
		t.Errorf("after both were deleted the store holds %v", names(got))
	}
	if want := []int{1, 2, 0}; !slices.Equal(seenAtEnqueue, want) {
		t.Errorf("objects in the store at each passed event: %v, want %v (drop-b's delete not passed on)", seenAtEnqueue, want)
	}
	if only := s.List(func(j *batchv1.Job) bool { return j.Name == "x" }); len(only) != 0 {
		t.Errorf("filtered list: %v", names(only))
	}
}

func names(jobs []*batchv1.Job) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.Name+"@"+j.ResourceVersion)
	}
	return out
}
