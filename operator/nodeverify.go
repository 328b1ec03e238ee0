package operator

import (
	"context"

	"github.com/shimkit/shimkit/internal/operator/decide"
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

// startVerifies starts the plan's verifying Jobs (decide.Plan.Verify),
// each once the node gate commits its reservation; refused: the gate
// refused one.
func (r *jobStarter) startVerifies(ctx context.Context, obs *observed, verify []decide.Start) (refused bool, _ error) {
	return r.startNodes(ctx, obs, verify)
}
