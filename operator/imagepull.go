package operator

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/operator/decide"
	"github.com/shimkit/shimkit/operator/nodejob"
)

// pullCheck is how often the running installer Jobs of a Shim whose
// artifact is an image are checked for a pull the kubelet failed.
const pullCheck = 10 * time.Second

// readPulls reads, for an image Shim, the pods of its running installer
// Jobs, and keeps by node the failure of each whose pod waits for an image
// the kubelet could not pull (nodejob.PullFailure: the Shim's image, not
// found or refused, or the installer's own).
func (r *resultReader) readPulls(ctx context.Context, obs *observed) error {
	if obs.Shim.Spec.FetchStrategy.Type != v1alpha1.FetchImage {
		return nil
	}
	var mu sync.Mutex
	g := r.group(ctx)
	for i := range obs.Views {
		v := &obs.Views[i]
		j := v.Job
		if j == nil || !j.Running() {
			continue
		}
		g.Go(func() error {
			pods, err := nodejob.Pods(ctx, r.reader, j.Object)
			if err != nil {
				return err
			}
			p := &plan.NodePlan{Shim: plan.ShimRef{Name: obs.Shim.Name, UID: string(obs.Shim.UID)}, Node: v.Node.Name, Operation: plan.Operation(j.Op), SpecHash: j.SpecHash}
			if res := nodejob.PullFailure(pods, p); res != nil {
				mu.Lock()
				defer mu.Unlock()
				if obs.Pulls == nil {
					obs.Pulls = map[string]*plan.NodeResult{}
				}
				obs.Pulls[v.Node.Name] = res
			}
			return nil
		})
	}
	return g.Wait()
}

// decideStuckPulls ends the running installer Jobs whose pull failed
// (readPulls): each fails at once with that failure as its result,
// reported as an installer's would be, instead of pending until its
// deadline. While an image Shim's Jobs run it is looked at again within
// pullCheck.
func decideStuckPulls(obs *observed) ([]decide.Action, error) {
	if obs.Shim.Spec.FetchStrategy.Type != v1alpha1.FetchImage {
		return nil, nil
	}
	var ends decide.Together
	for i := range obs.Views {
		v := &obs.Views[i]
		j := v.Job
		if j == nil || !j.Running() {
			continue
		}
		if due := obs.Now.Add(pullCheck); obs.Due.IsZero() || due.Before(obs.Due) {
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
		ends = append(ends, decide.PatchJob{Job: j.Object, Node: v.Node.Name, Reason: string(res.Reason), Patch: data})
	}
	return []decide.Action{ends}, nil
}
