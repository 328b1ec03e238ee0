package operator

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/client-go/tools/events"

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
			r := &Reconciler{recorder: rec}
			var e nodeEvents
			for i := tc.nodes - 1; i >= 0; i-- {
				e.add("Installing", "Install", fmt.Sprintf("node n%03d (Job j)", i))
			}
			r.flushEvents(&v1alpha1.Shim{}, &e)
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
