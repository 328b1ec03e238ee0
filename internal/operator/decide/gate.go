package decide

import (
	"cmp"
	"slices"
	"time"

	"github.com/shimkit/shimkit/internal/nodelabel/record"
	"github.com/shimkit/shimkit/internal/operator/health"
	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// JudgeGate is the health gate's verdict on the workload failures of the
// updated nodes (workloads: read for every targeted node) and their lost
// handlers, under the Shim's thresholds: the trip, or nil.
func JudgeGate(obs *Snapshot, workloads []health.Failure) *Trip {
	limits, _ := shimspec.Gate(obs.Shim)
	updated := UpdatedNodes(obs)
	fs := slices.DeleteFunc(slices.Clone(workloads), func(f health.Failure) bool { return !updated[f.Node] })
	fs = append(fs, LostHandlers(obs, updated)...)
	slices.SortStableFunc(fs, func(a, b health.Failure) int { return cmp.Compare(a.Node, b.Node) })
	if v := limits.Check(fs); v.Tripped {
		return &Trip{Reason: v1alpha1.ReasonWorkloadFailures, Message: v.Message}
	}
	return nil
}

// UpdatedNodes are the targeted nodes that have the target.
func UpdatedNodes(obs *Snapshot) map[string]bool {
	updated := map[string]bool{}
	for i := range obs.Views {
		if v := &obs.Views[i]; v.Targeted() && v.Label == record.Installed && v.SpecHash == obs.Hash {
			updated[v.Node.Name] = true
		}
	}
	return updated
}

// GateSince is when the workloads' failures start to count: the start of
// the target's rollout, or now for a rollout not started or just retried.
func GateSince(obs *Snapshot, now time.Time) time.Time {
	if st := shimspec.RolloutOf(obs.Shim, obs.Hash); st != nil && !obs.RetriedNow && !obs.RetryRequested() {
		return st.StartedAt.Time
	}
	return now
}

// LostHandlers are the updated nodes whose kubelet no longer reports one
// of the Shim's handlers (past the grace after their installer: drift),
// each a failure of its own.
func LostHandlers(obs *Snapshot, updated map[string]bool) []health.Failure {
	var fs []health.Failure
	handlers := nodeview.HandlerNames(obs.Shim)
	for i := range obs.Views {
		v := &obs.Views[i]
		if !updated[v.Node.Name] || v.Drifted == "" {
			continue
		}
		if h := nodeview.MissingHandler(v.Node, handlers); h != "" {
			fs = append(fs, health.Failure{Node: v.Node.Name, Reason: health.ReasonHandlerMissing, Message: "handler " + h + " is not served"})
		}
	}
	return fs
}
