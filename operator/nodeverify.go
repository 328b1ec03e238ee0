package operator

import (
	"context"
	"slices"
	"time"

	"github.com/shimkit/shimkit/internal/operator/fleet"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/nodegate"
)

// Verification: a node that has the Shim at its current spec is checked,
// every Options.VerifyPeriod, against what its install recorded, by a
// verifying installer Job (plan.OpVerify) that changes nothing: the
// installed files' digests, the handlers in containerd's config, the spec
// and the artifact. The finding is recorded on the node
// (nodelabel.Verification); a node that drifted is installed again under
// maxUpdate, like a node whose kubelet stopped reporting a handler
// (drift.go). The install itself counts as a verification (nodelabel.Mark),
// so a node is first verified a period after its install.
//
// Verifying Jobs hold their node in the node gate like any installer, and
// at most maxUpdate of a Shim's run at once; they start only once the
// rollout is done, and never count as nodes changing.

// startVerifies starts verifying Jobs on the nodes that are due, the
// longest due first, as many as budget leaves beside the verifications
// running, and returns when to look again (zero: no node will be due).
func (r *jobStarter) startVerifies(ctx context.Context, obs *observed, budget int) (time.Time, error) {
	if r.opts.VerifyPeriod < 0 {
		return time.Time{}, nil
	}
	now := time.Now()
	var next time.Time
	later := func(at time.Time) {
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	running := 0
	type dueNode struct {
		v  *fleet.NodeView
		at time.Time
	}
	var due []dueNode
	for i := range obs.Views {
		v := &obs.Views[i]
		if v.Verify != nil && v.Verify.Running() {
			running++
		}
		at, ok := v.VerifyDue(obs.Hash, r.opts.VerifyPeriod)
		switch {
		case !ok:
		case at.After(now):
			later(at)
		default:
			due = append(due, dueNode{v, at})
		}
	}
	slices.SortStableFunc(due, func(a, b dueNode) int { return a.at.Compare(b.at) })
	g := r.group(ctx)
	started := 0
	for _, d := range due {
		v := d.v
		if started >= budget-running {
			break // the next ones when these finish (their Jobs' events)
		}
		job := jobview.JobName(obs.Shim.Name, v.Node.Name, jobview.OpVerify, obs.Hash)
		if !r.gate.AcquireVerify(v.Node.Name, jobview.LabelValue(obs.Shim.Name), job, now) {
			later(now.Add(nodegate.Retry)) // another Shim's installer runs there
			continue
		}
		started++
		g.Go(func() error {
			err := r.startJob(ctx, obs, v, jobview.OpVerify, "Verifying")
			if err != nil {
				r.gate.Release(v.Node.Name, job)
			}
			return err
		})
	}
	return next, g.Wait()
}
