package decide

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/fleet"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// NodeReads are what a snapshot's node views are made of, as read: the
// nodes and the operator's Jobs, which Jobs a retry deleted (nil: none),
// the installers' results (nil: none read), the nodes the node gate holds
// for the Shim's Jobs (node → Job), and the API server's version (how an
// image reaches an installer).
type NodeReads struct {
	Nodes         []*corev1.Node
	Jobs          []*batchv1.Job
	Deleted       func(*v1alpha1.Shim, types.UID) bool
	Result        func(*jobview.View) (*plan.NodeResult, bool)
	Held          map[string]string
	ServerVersion string
}

// BuildViews makes the snapshot's node views towards its target
// (obs.Hash): each node as the Shim sees it (nodeview.View), with its
// newest install or uninstall Job and its newest verifying Job when they
// tell of the node's machine now, their results, whether another Job of
// the gate holds it, and a read-only host skipped for the target. It is
// the one way a reconcile and a preview (kubectl shimkit plan) see the
// nodes, and returns the UIDs of the Jobs attached.
func BuildViews(obs *Snapshot, in NodeReads) map[types.UID]bool {
	shim := obs.Shim
	deleted := in.Deleted
	if deleted == nil {
		deleted = func(*v1alpha1.Shim, types.UID) bool { return false }
	}
	latest, verifying := NewestJobs(shim, in.Jobs, deleted)
	canary := nodeview.CanaryHash(shim)
	attached := map[types.UID]bool{}
	obs.Views = make([]fleet.NodeView, 0, len(in.Nodes))
	for _, n := range in.Nodes {
		v := nodeview.View(shim, n, canary)
		if shim.Spec.FetchStrategy.Type == v1alpha1.FetchImage && !v.Preinstalled {
			v.ImageWay = nodeview.ImageWay(in.ServerVersion, n)
		}
		for _, j := range attachJobs(&v, latest, verifying) {
			if in.Result != nil {
				j.Result, j.ResultRead = in.Result(j)
			}
			attached[j.Object.UID] = true
		}
		if job, ok := in.Held[v.Node.Name]; ok && (v.Job == nil || v.Job.Object.Name != job) {
			v.Held = true
		}
		if why, ok := nodeview.ReadOnlyHost(&v, obs.Hash); ok && v.Matching && v.Skip == nil {
			v.Skip = &fleet.Skip{Reason: v1alpha1.SkipReadOnlyHost, Detail: why}
		}
		obs.Views = append(obs.Views, v)
	}
	obs.Fresh = make([]bool, len(obs.Views)) // no result read anew (yet)
	return attached
}

// attachJobs gives the node's view its newest Jobs (install or uninstall,
// and verifying) when they tell of the node's machine now, and returns
// those it attached.
func attachJobs(v *fleet.NodeView, latest, verifying map[string]*jobview.View) []*jobview.View {
	var out []*jobview.View
	if j := latest[v.Node.Name]; j != nil && nodeview.ForMachine(v, j) {
		v.Job = j
		out = append(out, j)
	}
	if j := verifying[v.Node.Name]; j != nil && nodeview.ForMachine(v, j) {
		v.Verify = j
		out = append(out, j)
	}
	return out
}

// NewSnapshot is the head of a snapshot of shim, read at now (the rollout
// clock's reading: rolloutNow): its spec's hash, why the spec is refused
// (nil: it is not), and the artifact the status shows. Its target comes
// with the artifact pinned (Aim), its nodes with BuildViews.
func NewSnapshot(shim *v1alpha1.Shim, s shimspec.Settings, now, rolloutNow time.Time) *Snapshot {
	return &Snapshot{Shim: shim, SpecHash: nodeview.SpecHash(shim), Refusal: shimspec.RefusalOf(shim, s), Now: now, RolloutNow: rolloutNow, Shown: shim.Status.Artifact}
}

// Aim makes art (nil: none pinned) the snapshot's artifact: the target's
// hash and the rollout's rules follow from it and the spec (wrong rules
// are refused: shimspec.RefusalOf).
func (o *Snapshot) Aim(art *v1alpha1.ResolvedArtifact) {
	o.Art = art
	o.Hash = shimspec.TargetHash(o.Shim, o.SpecHash, art)
	o.Windows, o.Steps, _ = shimspec.RolloutRules(o.Shim)
}
