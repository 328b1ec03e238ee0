package decide

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/nodelabel/record"
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
// (obs.Hash): each node as the Shim sees it (NodeViewOf), with its
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
	obs.Views = make([]NodeView, 0, len(in.Nodes))
	for _, n := range in.Nodes {
		v := NodeViewOf(shim, n, canary)
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
		if why, ok := ReadOnlyHost(&v, obs.Hash); ok && v.Matching && v.Skip == nil {
			v.Skip = &nodeview.Skip{Reason: v1alpha1.SkipReadOnlyHost, Detail: why}
		}
		obs.Views = append(obs.Views, v)
	}
	obs.Fresh = make([]bool, len(obs.Views)) // no result read anew (yet)
	return attached
}

// attachJobs gives the node's view its newest Jobs (install or uninstall,
// and verifying) when they tell of the node's machine now, and returns
// those it attached.
func attachJobs(v *NodeView, latest, verifying map[string]*jobview.View) []*jobview.View {
	var out []*jobview.View
	if j := latest[v.Node.Name]; j != nil && ForMachine(v, j) {
		v.Job = j
		out = append(out, j)
	}
	if j := verifying[v.Node.Name]; j != nil && ForMachine(v, j) {
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
	return &Snapshot{Shim: shim, SpecHash: nodeview.SpecHash(shim), Refusal: shimspec.RefusalOf(shim, s), Now: now, RolloutNow: rolloutNow, Shown: shim.Status.Artifact,
		Retried: shim.Status.Retried, RetriedHash: shim.Status.RetriedSpecHash}
}

// Aim makes art (nil: none pinned) the snapshot's artifact: the target's
// hash and the rollout's rules follow from it and the spec (wrong rules
// are refused: shimspec.RefusalOf).
func (o *Snapshot) Aim(art *v1alpha1.ResolvedArtifact) {
	o.Art = art
	o.Hash = shimspec.TargetHash(o.Shim, o.SpecHash, art)
	o.Windows, o.Steps, _ = shimspec.RolloutRules(o.Shim)
}

// NodeViewOf is the node as the Shim sees it, from the Shim and the Node
// alone (canary: the hash of the Shim's canary, nodeview.CanaryHash):
// whether the selector matches it and, if so, why it is skipped (nil: it
// is eligible); whether its image has the shim, it is fresh or forced;
// the Shim's label, spec hash and records on it. Its Jobs come with
// BuildViews.
func NodeViewOf(shim *v1alpha1.Shim, node *corev1.Node, canary string) NodeView {
	v := NodeView{Node: node, Matching: nodeview.Matches(shim, node), Canary: canary,
		Fresh: nodeview.HasPendingTaint(node), Forced: node.Annotations[nodeview.ForceRolloutAnnotation] == "true",
		Preinstalled: nodeview.Preinstalled(shim, node)}
	if v.Matching {
		v.Skip = nodeview.Eligibility(shim, node, v.Preinstalled)
	}
	v.Label = node.Labels[record.Key(shim.Name)]
	v.SpecHash = node.Annotations[record.Key(shim.Name)]
	recs := record.RecordsOf(node, shim.Name, shim.UID)
	v.Failure, v.Verified, v.Stale = recs.Failure, recs.Verification, recs.Stale
	if recs.Reimaged {
		// The label is the old machine's: the node has nothing of the Shim
		// (forgetReimaged removes the label at once), and is installed
		// again.
		v.Label, v.SpecHash, v.Reimaged = "", "", true
	}
	if recs.LabelledByOther || recs.Unrecorded {
		// A predecessor of the same name's, or no Shim's (a node pool's
		// declaration), at a spec unknown: installed again, which makes
		// the label this Shim's. Until then the startup taint stays.
		v.SpecHash = ""
	}
	return v
}

// ForMachine: the Job tells of the node's machine now. A finished Job made
// for the machine the node had before a reimage under its name ran
// there, and what it did went with that machine: it tells nothing (nor,
// made before Jobs named their machine, does one of a node seen reimaged
// now). A running one is followed to its end.
func ForMachine(v *NodeView, j *jobview.View) bool {
	return j.Running() || !v.Reimaged && !record.OtherMachine(j.Machine, v.Node)
}

// ReadOnlyHost says why the node's installer found it read-only for the
// target (its Job's result, or the failure recorded on the node, at that
// target): the node is skipped, not failed.
func ReadOnlyHost(v *NodeView, target string) (string, bool) {
	if j := v.Job; j != nil && j.Failed() && !j.Sibling() && j.Op == jobview.OpInstall && j.SpecHash == target {
		if reason, msg := j.Failure(); reason == string(plan.ReasonReadOnlyHost) {
			return msg, true
		}
		return "", false
	}
	if f := v.Failure; f != nil && f.Reason == string(plan.ReasonReadOnlyHost) && f.SpecHash == target {
		return f.Message, true
	}
	return "", false
}

// NodeViewsOf is how the Shim sees each node, read as a reconcile reads
// it: whether it matches and can run the shim (and if not, why it is
// skipped), its label, hash and records, and the newest install or
// uninstall Job and the newest verifying Job the Shim has there, with the
// installer's result of a finished one (result: read from the Job's pods,
// as a reconcile reads it, nodejob.JobResult; nil: the Job's conditions
// alone). It calls no API server and writes nothing: kubectl shimkit
// status shows the fleet as the operator sees it.
func NodeViewsOf(shim *v1alpha1.Shim, nodes []*corev1.Node, jobs []*batchv1.Job, result func(*batchv1.Job) *plan.NodeResult) []NodeView {
	obs := &Snapshot{Shim: shim, Hash: shim.Status.SpecHash}
	BuildViews(obs, NodeReads{Nodes: nodes, Jobs: jobs, Result: FinishedResult(result)})
	return obs.Views
}

// FinishedResult reads the result of a finished Job with result (nil:
// none read).
func FinishedResult(result func(*batchv1.Job) *plan.NodeResult) func(*jobview.View) (*plan.NodeResult, bool) {
	if result == nil {
		return nil
	}
	return func(j *jobview.View) (*plan.NodeResult, bool) {
		if j.Running() {
			return nil, false
		}
		return result(j.Object), true
	}
}
