package results

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/shimkit/shimkit/installer/plan"
)

// TestPrefetchTake: a result read ahead is taken once per Shim, once the
// read has ended (a nil one too: read, none found); a failed read, a
// forgotten Job or none at all leaves the reading to the reconcile.
func TestPrefetchTake(t *testing.T) {
	ctx := context.Background()
	res := &plan.NodeResult{Outcome: plan.Succeeded}
	p := prefetches{jobs: map[types.UID]*prefetch{}}
	inFlight := &prefetch{done: make(chan struct{})}
	p.jobs["j1"] = inFlight
	p.jobs["j2"] = &prefetch{done: closed(), err: errors.New("no")}
	p.jobs["j3"] = &prefetch{done: closed(), results: map[string]*plan.NodeResult{"a": nil}}
	go func() {
		time.Sleep(10 * time.Millisecond)
		inFlight.results = map[string]*plan.NodeResult{"a": res, "b": nil}
		close(inFlight.done)
	}()
	if got, ok := p.take(ctx, "j1", "a"); !ok || got != res {
		t.Errorf("take j1 a = %v, %v; want the result", got, ok)
	}
	if got, ok := p.take(ctx, "j1", "a"); ok {
		t.Errorf("take j1 a again = %v, %v; want none", got, ok)
	}
	if got, ok := p.take(ctx, "j1", "b"); !ok || got != nil {
		t.Errorf("take j1 b = %v, %v; want read, none found", got, ok)
	}
	if _, ok := p.jobs["j1"]; ok {
		t.Error("j1 kept after its last Shim took its result")
	}
	if _, ok := p.take(ctx, "j2", "a"); ok {
		t.Error("a failed read taken")
	}
	p.forget("j3")
	if _, ok := p.take(ctx, "j3", "a"); ok {
		t.Error("a forgotten Job's result taken")
	}
	if _, ok := p.take(ctx, "j4", "a"); ok {
		t.Error("a result never read taken")
	}
}

func closed() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}
