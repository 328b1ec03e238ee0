package decide

import (
	"fmt"
	"time"

	"github.com/shimkit/shimkit/internal/operator/nodejob"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// StuckPulls ends the running installer Jobs whose pull failed
// (results.Reader.ReadPulls): each fails at once with that failure as its result,
// reported as an installer's would be, instead of pending until its
// deadline. While an image Shim's Jobs run it is looked at again within
// PullCheck.
func StuckPulls(obs *Snapshot) ([]Action, error) {
	if obs.Shim.Spec.FetchStrategy.Type != v1alpha1.FetchImage {
		return nil, nil
	}
	var ends Together
	for i := range obs.Views {
		v := &obs.Views[i]
		j := v.Job
		if j == nil || !j.Running() {
			continue
		}
		if due := obs.Now.Add(PullCheck); obs.Due.IsZero() || due.Before(obs.Due) {
			obs.Due = due
		}
		res := obs.Pulls[v.Node.Name]
		if res == nil {
			continue
		}
		data, err := nodejob.FailPatch(res)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", v.Node.Name, err)
		}
		ends = append(ends, PatchJob{Job: j.Object, Node: v.Node.Name, Reason: string(res.Reason), Patch: data})
	}
	return []Action{ends}, nil
}

// PullCheck is how often the running installer Jobs of a Shim whose
// artifact is an image are checked for a pull the kubelet failed.
const PullCheck = 10 * time.Second
