package decide

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/rollout"
)

// TestBatch: a Shim offers the node gate the nodes it would install now
// only when another Shim may share their Jobs (or its own change is new),
// never when halted or with nothing to install; it is unsettled while
// a Shim's change is unreconciled.
func TestBatch(t *testing.T) {
	other := func(gen, observed int64) v1alpha1.Shim {
		s := *decideShim()
		s.Name, s.UID, s.Generation, s.Status.ObservedGeneration = "other", "uid-other", gen, observed
		return s
	}
	start := rollout.Plan{Start: []string{"n1"}, Budget: 2}
	for _, tc := range []struct {
		name      string
		shims     []v1alpha1.Shim
		generated bool // the Shim's own change is new
		rollin    rollout.Plan
		batching  bool
		nodes     []string // nil: no offer
		unsettled bool
	}{
		{name: "alone, settled: no offer", rollin: start, batching: true},
		{name: "alone, its change new: offers and waits", generated: true, rollin: start, batching: true, nodes: []string{"n1", "n2"}, unsettled: true},
		{name: "another Shim, settled", shims: []v1alpha1.Shim{other(1, 1)}, rollin: start, batching: true, nodes: []string{"n1", "n2"}},
		{name: "another Shim's change unreconciled", shims: []v1alpha1.Shim{other(2, 1)}, rollin: start, batching: true, nodes: []string{"n1", "n2"}, unsettled: true},
		{name: "a node the other Shim has yet to reach", shims: []v1alpha1.Shim{other(1, 1)}, rollin: start, batching: true, nodes: []string{"n1", "n2"}, unsettled: true},
		{name: "halted", shims: []v1alpha1.Shim{other(1, 1)}, rollin: rollout.Plan{Start: []string{"n1"}, Halted: true}, batching: true},
		{name: "nothing to install", shims: []v1alpha1.Shim{other(1, 1)}, batching: true},
		{name: "batching off", shims: []v1alpha1.Shim{other(1, 1)}, rollin: start},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shim := decideShim()
			shim.Generation, shim.Status.ObservedGeneration = 1, 1
			if tc.generated {
				shim.Generation = 2
			}
			obs := recordsObs(shim, map[string]*jobview.View{"n1": nil, "n2": nil}, nil)
			for i := range obs.Views {
				obs.Views[i].Plan = &plan.NodePlan{Node: obs.Views[i].Node.Name}
				obs.Views[i].Node.Labels[nodelabel.Key("other")] = nodelabel.Installed // the other Shim has been there
			}
			if strings.HasPrefix(tc.name, "a node the other") {
				delete(obs.Views[1].Node.Labels, nodelabel.Key("other"))
			}
			obs.Shims = append([]v1alpha1.Shim{*shim}, tc.shims...)
			b := Batch(obs, tc.rollin, tc.batching)
			switch {
			case tc.nodes == nil && b.Offer != nil:
				t.Errorf("offered %v", b.Offer.Nodes)
			case tc.nodes != nil && (b.Offer == nil || !slices.Equal(slices.Sorted(maps.Keys(b.Offer.Nodes)), tc.nodes)):
				t.Errorf("offer %+v, want nodes %v", b.Offer, tc.nodes)
			case b.Unsettled != tc.unsettled:
				t.Errorf("unsettled %v, want %v", b.Unsettled, tc.unsettled)
			}
		})
	}
}
