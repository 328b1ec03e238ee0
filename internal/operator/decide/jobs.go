package decide

import (
	"errors"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/internal/text"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/rollout"

	"github.com/shimkit/shimkit/internal/nodelabel/record"
)

// NewestJobs indexes the Shim's Jobs by node: the newest install or
// uninstall Job of each node, and apart from them the newest verifying
// Job (it changes nothing, so the rollout does not see it). Another
// Shim's Jobs, an earlier Shim's of the same name and Jobs a retry
// deleted are left out.
func NewestJobs(shim *v1alpha1.Shim, jobs []*batchv1.Job, deleted func(*v1alpha1.Shim, types.UID) bool) (latest, verifying map[string]*jobview.View) {
	latest, verifying = map[string]*jobview.View{}, map[string]*jobview.View{}
	for _, j := range jobs {
		jv, ok := jobview.For(j, shim)
		if !ok || deleted(shim, j.UID) {
			continue
		}
		byNode := latest
		if jv.Op == jobview.OpVerify {
			byNode = verifying
		}
		n := jobview.NodeOf(j)
		if old := byNode[n]; old == nil || jobview.Newer(j, old.Object) {
			byNode[n] = jv
		}
	}
	return latest, verifying
}

func FailedNodes(obs *Snapshot, install, removal rollout.Plan) []v1alpha1.NodeFailure {
	var out []v1alpha1.NodeFailure
	for _, name := range slices.Concat(install.Failed, removal.Failed) {
		for _, v := range obs.Views {
			if v.Node.Name != name {
				continue
			}
			switch {
			case v.PlanErr != nil:
				out = append(out, v1alpha1.NodeFailure{Node: name, Reason: string(PlanReason(v.PlanErr)), Message: text.Truncate(v.PlanErr.Error(), 512)})
			case v.Job != nil:
				reason, msg := v.Job.Failure()
				out = append(out, v1alpha1.NodeFailure{Node: name, Reason: reason, Message: text.Truncate(msg, 512)})
			case v.Failure != nil:
				out = append(out, v1alpha1.NodeFailure{Node: name, Reason: v.Failure.Reason, Message: text.Truncate(v.Failure.Message, 512)})
			}
		}
	}
	return out
}

// PlanReason classifies an error of BuildPlan as the installer would.
func PlanReason(err error) plan.Reason {
	if errors.Is(err, shimspec.ErrNoArtifact) {
		return plan.ReasonArtifactInvalid
	}
	return plan.ReasonInvalidPlan
}

// OpAction names an operation for events.
func OpAction(op string) string {
	if op == jobview.OpUninstall {
		return "Uninstall"
	}
	return "Install"
}

// OthersWillOffer: another Shim selects one of the nodes and has never
// been on it (no label, no failure): a node that joined, which every Shim
// selecting it is about to install, or one their rollouts have yet to
// reach.
func OthersWillOffer(obs *Snapshot, shims []v1alpha1.Shim, nodes map[string]bool) bool {
	for i := range obs.Views {
		n := obs.Views[i].Node
		if !nodes[n.Name] {
			continue
		}
		for k := range shims {
			s := &shims[k]
			if s.Name == obs.Shim.Name || !s.DeletionTimestamp.IsZero() {
				continue
			}
			if _, been := n.Labels[record.Key(s.Name)]; been || record.FailureOf(n, s.Name, s.UID) != nil {
				continue
			}
			if nodeview.Matches(s, n) && !nodeview.Preinstalled(s, n) && nodeview.Eligibility(s, n, false) == nil {
				return true
			}
		}
	}
	return false
}
