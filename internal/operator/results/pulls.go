package results

import (
	"context"
	"sync"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/nodejob"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// ReadPulls reads, for an image Shim, the pods of its running installer
// Jobs, and keeps by node the failure of each whose pod waits for an image
// the kubelet could not pull (nodejob.PullFailure: the Shim's image, not
// found or refused, or the installer's own).
func (r *Reader) ReadPulls(ctx context.Context, obs *decide.Snapshot) error {
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
			pods, err := Pods(ctx, r.reader, j.Object)
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
