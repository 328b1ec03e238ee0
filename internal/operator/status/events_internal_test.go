package status

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/events"

	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/phase"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestWaveEvents: a wave's per-node events become one Event per reason,
// counting the nodes and naming at most ten.
func TestWaveEvents(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes int
		want  []string
	}{
		{"none", 0, nil},
		{"one node", 1, []string{"Normal Installing node n000 (Job j)"}},
		{"a wave", 3, []string{"Normal Installing 3 nodes: node n000 (Job j); node n001 (Job j); node n002 (Job j)"}},
		{"a big wave", 100, []string{"Normal Installing 100 nodes: node n000 (Job j); node n001 (Job j); node n002 (Job j); node n003 (Job j); node n004 (Job j); node n005 (Job j); node n006 (Job j); node n007 (Job j); node n008 (Job j); node n009 (Job j); and 90 more"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := events.NewFakeRecorder(10)
			r := New(nil, phase.NewRecorder(rec, nil), nil, nil)
			var e NodeEvents
			for i := tc.nodes - 1; i >= 0; i-- {
				e.Add("Installing", "Install", fmt.Sprintf("node n%03d (Job j)", i))
			}
			r.Flush(context.Background(), &v1alpha1.Shim{}, &e, true, time.Now())
			close(rec.Events)
			var got []string
			for ev := range rec.Events {
				got = append(got, ev)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestEventsPaced: during a rollout a Shim's per-node events go out at most
// every decide.EventEvery, as the plan paces them (decide.EventsAt, on
// when they last went out), gathering the reconciles in between (and the
// plan says when to come back for them); a settled rollout emits at once.
func TestEventsPaced(t *testing.T) {
	rec := events.NewFakeRecorder(10)
	r := New(nil, phase.NewRecorder(rec, nil), nil, nil)
	shim := &v1alpha1.Shim{}
	shim.Name = "spin"
	t0 := time.Now()
	reconcile := func(node string, settled bool, at time.Time) time.Time {
		var e NodeEvents
		e.Add("Installed", "Install", "node "+node)
		plan := decide.EventsAt(r.LastEmitted(shim.Name), at, settled)
		if r.Flush(context.Background(), shim, &e, plan.Emit, at); r.Held(shim.Name) {
			return plan.Due
		}
		return time.Time{}
	}
	drain := func() (got []string) {
		for {
			select {
			case ev := <-rec.Events:
				got = append(got, ev)
			default:
				return got
			}
		}
	}
	for _, step := range []struct {
		node    string
		settled bool
		at      time.Duration
		due     time.Duration // -1: none
		want    []string
	}{
		{"n1", false, 0, -1, []string{"Normal Installed node n1"}},
		{"n2", false, time.Second, decide.EventEvery, nil},
		{"n3", false, 2 * time.Second, decide.EventEvery, nil},
		{"n4", false, decide.EventEvery, -1, []string{"Normal Installed 3 nodes: node n2; node n3; node n4"}},
		{"n5", false, decide.EventEvery + time.Second, 2 * decide.EventEvery, nil},
		{"n6", true, decide.EventEvery + 2*time.Second, -1, []string{"Normal Installed 2 nodes: node n5; node n6"}},
	} {
		due := reconcile(step.node, step.settled, t0.Add(step.at))
		if step.due < 0 && !due.IsZero() || step.due >= 0 && !due.Equal(t0.Add(step.due)) {
			t.Errorf("%s: due %v, want %v", step.node, due.Sub(t0), step.due)
		}
		if got := drain(); strings.Join(got, "\n") != strings.Join(step.want, "\n") {
			t.Errorf("%s: events %q, want %q", step.node, got, step.want)
		}
	}
}
