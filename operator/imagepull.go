package operator

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/operator/nodejob"
)

// pullCheck is how often the running installer Jobs of a Shim whose
// artifact is an image are checked for a pull the kubelet failed.
const pullCheck = 10 * time.Second

// failStuckPulls ends the running installer Jobs of an image Shim whose
// pod waits for an image the kubelet could not pull (nodejob.PullFailure:
// the Shim's image, not found or refused, or the installer's own): the
// Job fails at once with that failure as its result, reported as an
// installer's would be, instead of pending until its deadline. While such
// Jobs run the Shim is looked at again within pullCheck.
func (r *Reconciler) failStuckPulls(ctx context.Context, obs *observed) error {
	if obs.shim.Spec.FetchStrategy.Type != v1alpha1.FetchImage {
		return nil
	}
	g := r.group(ctx)
	for i := range obs.views {
		v := &obs.views[i]
		j := v.Job
		if j == nil || !j.Running() {
			continue
		}
		if due := time.Now().Add(pullCheck); obs.due.IsZero() || due.Before(obs.due) {
			obs.due = due
		}
		g.Go(func() error {
			pods, err := nodejob.Pods(ctx, r.reader, j.Object)
			if err != nil {
				return err
			}
			p := &plan.NodePlan{Shim: plan.ShimRef{Name: obs.shim.Name, UID: string(obs.shim.UID)}, Node: v.Node.Name, Operation: plan.Operation(j.Op), SpecHash: j.SpecHash}
			res := nodejob.PullFailure(pods, p)
			if res == nil {
				return nil
			}
			data, err := nodejob.FailPatch(res)
			if err != nil {
				return err
			}
			if err := r.client.Patch(ctx, j.Object, client.RawPatch(types.MergePatchType, data)); err != nil {
				return fmt.Errorf("end installer Job %s of node %s (%s): %w", j.Object.Name, v.Node.Name, res.Reason, err)
			}
			return nil
		})
	}
	return g.Wait()
}
