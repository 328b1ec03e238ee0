package operator

import (
	"context"
	"time"

	"github.com/shimkit/shimkit/internal/operator/decide"
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

// startVerifies starts the plan's verifying Jobs (decide.Plan.Verify, the
// longest due first), at most its slots, each once the node gate admits
// its node, and returns when to look again (zero: no node will be due).
func (r *jobStarter) startVerifies(ctx context.Context, obs *observed, p *decide.Plan) (time.Time, error) {
	next := p.VerifyNext
	now := time.Now()
	g := r.group(ctx)
	started := 0
	for _, v := range p.Verify {
		if started >= p.VerifySlots {
			break // the next ones when these finish (their Jobs' events)
		}
		job := jobview.JobName(obs.Shim.Name, v.Node.Name, jobview.OpVerify, obs.Hash)
		if !r.gate.AcquireVerify(v.Node.Name, jobview.LabelValue(obs.Shim.Name), job, now) {
			// Another Shim's installer runs there: looked at again soon.
			if retry := now.Add(nodegate.Retry); next.IsZero() || retry.Before(next) {
				next = retry
			}
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
