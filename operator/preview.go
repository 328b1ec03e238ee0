package operator

import (
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/runtimeclass"
)

// Preview is what the operator would do with a Shim's spec on the fleet
// as it is: the same decision a reconcile makes (decide.Decide, through
// decide.Simulate wave after wave), computed from lists read once, writing
// nothing. kubectl shimkit plan prints it.
type Preview struct {
	Shim *v1alpha1.Shim
	// Target is the hash the rollout converges to; Pinned: it includes
	// the artifact the status pinned for this spec (else the operator
	// resolves the artifact when it rolls the spec out, and the nodes'
	// plans pin what it finds).
	Target string
	Pinned bool
	// Refusal is why the operator would roll the spec out to no node.
	Refusal *Refusal
	// Installed are the nodes that have the shim before the rollout (at
	// any spec): a wave's install of one of them is an upgrade.
	Installed []string
	// Skipped are the selected nodes the rollout leaves alone, and why.
	Skipped []SkippedNode
	// StartNow are the nodes whose install Jobs the operator's next
	// reconcile starts.
	StartNow []string
	// Waves are the rollout's course when every node it starts succeeds,
	// wave after wave, through bakes and windows; Stopped says why it
	// ended before every node was done (Paused, Halted; "": it did not),
	// Halt what halts it.
	Waves   []Wave
	Stopped string
	Halt    *Refusal
	// Classes are the Shim's RuntimeClasses and what becomes of each.
	Classes []ClassPreview
}

// Refusal is a reason and a message: why a spec is rolled out to no
// node, or what halts its rollout.
type Refusal = decide.Refusal

// Wave is one wave of a rollout's course: the nodes it installs (or
// upgrades) and uninstalls, when it starts (now, the end of the previous
// step's bake, or when a maintenance window opens), the rollout step it
// belongs to (spec.rolloutStrategy.steps, 0-based; -1: no steps), and
// whether it waits for the Jobs running before it to end.
type Wave struct {
	At              time.Time
	Install, Remove []string
	Step            int
	AfterRunning    bool
}

// SkippedNode is a node the Shim selects that the rollout leaves alone:
// the reason (a constant of package nodeview's Eligibility, as the status
// shows it) and what it found.
type SkippedNode struct {
	Node, Reason, Detail string
}

// ClassPreview is one RuntimeClass of the Shim and what the rollout does
// with it.
type ClassPreview struct {
	Name    string `json:"name"`
	Handler string `json:"handler"`
	// Action: Create (once the first node has the shim), Update,
	// Unchanged, TakeOver, Delete, or Conflict (not the Shim's: never touched; the Shim is
	// Degraded RuntimeClassConflict), with Owner naming its controller
	// ("": none, an admin's or another tool's).
	Action string `json:"action"`
	Owner  string `json:"owner,omitempty"`
}

// RuntimeClass preview actions.
const (
	ClassCreate    = "Create"
	ClassUpdate    = "Update"
	ClassUnchanged = "Unchanged"
	ClassConflict  = "Conflict"
	// ClassTakeOver: runtime-class-manager's (spec.migrateFrom), taken
	// over before anything else; ClassDelete: the Shim's, no longer in its
	// spec.
	ClassTakeOver = "TakeOver"
	ClassDelete   = "Delete"
)

// PreviewRollout decides for shim (a spec to apply, carrying the live
// Shim's identity and status when it exists) on the nodes, the operator's
// Jobs (with their installers' results, as NodeViews reads them) and the
// cluster's RuntimeClasses, at now: the snapshot is built as a reconcile
// builds its own (decide.NewSnapshot, decide.BuildViews) and decided by
// the reconcile's own plan (decide.Preview: the records, then
// decide.PlanInstall under the same delivery rules: the current step, a
// bake, a window, a halt, a retry). What it cannot see: other Shims'
// pending installs (batches), the health gate's verdict on workloads, a
// revert's previous revision, and the node gate's holds; installs take no
// time in it.
func PreviewRollout(shim *v1alpha1.Shim, nodes []*corev1.Node, jobs []*batchv1.Job, result func(*batchv1.Job) *plan.NodeResult, classes []nodev1.RuntimeClass, opts Options, now time.Time) (*Preview, error) {
	opts = opts.withDefaults()
	obs, err := observePreview(world{Shim: shim, Nodes: nodes, Jobs: jobs, Now: now, RolloutNow: now, Result: decide.FinishedResult(result)},
		previewReads{classes: classSet(shim, classes)}, opts)
	if err != nil {
		return nil, err
	}
	p := &Preview{Shim: shim, Target: obs.Hash, Pinned: obs.Art != nil || shimspec.PinnedBySpec(shim.Spec.FetchStrategy)}
	if ref := obs.Refusal; ref != nil {
		p.Refusal = &Refusal{Reason: ref.Reason, Message: ref.Message}
	}
	for _, v := range obs.Views {
		if v.Installed() {
			p.Installed = append(p.Installed, v.Node.Name)
		}
		if v.Matching && v.Skip != nil {
			p.Skipped = append(p.Skipped, SkippedNode{Node: v.Node.Name, Reason: v.Skip.Reason, Detail: v.Skip.Detail})
		}
	}
	_, sim, err := decide.Preview(obs, decide.Rules{
		Policy:   decide.Policy{Planner: shimspec.Planner(obs.Shim, obs.Hash), PlanFor: obs.PlanFor(opts.settings())},
		Batching: false, VerifyPeriod: -1, Settings: opts.settings(), ServerVersion: opts.ServerVersion,
	})
	if err != nil {
		return nil, err
	}
	p.StartNow = slices.Clone(sim.First.Rollin.Start)
	for _, w := range sim.Waves {
		p.Waves = append(p.Waves, Wave{At: w.At, Install: w.Install, Remove: w.Remove, Step: w.Step, AfterRunning: w.AfterRunning})
	}
	p.Stopped = string(sim.Stopped)
	if h := sim.Halt; h != nil {
		p.Halt = &Refusal{Reason: h.Reason, Message: h.Message}
	}
	p.Classes = previewClasses(shim, classes)
	return p, nil
}

// classSet is the Shim's RuntimeClasses (its canary's among them) as
// read from the cluster's, as classes.Classes.Read reads them.
func classSet(shim *v1alpha1.Shim, existing []nodev1.RuntimeClass) *decide.ClassSet {
	set := &decide.ClassSet{}
	set.Put(shimspec.CanaryRuntimeClass(shim.Name), nil)
	for _, c := range shimspec.Classes(shim) {
		set.Put(c.Name, nil)
	}
	for i := range existing {
		set.Put(existing[i].Name, &existing[i])
	}
	return set
}

// previewClasses says what becomes of each of the Shim's RuntimeClasses
// once the rollout reaches a node: decide.Classes, the reconcile's own
// decision, on the RuntimeClasses as they are (the canary's left out: it
// comes and goes with the installs).
func previewClasses(shim *v1alpha1.Shim, existing []nodev1.RuntimeClass) []ClassPreview {
	if shim.UID == "" {
		// A spec not applied yet: the Shim it becomes owns what it creates
		// (a RuntimeClass needs its owner's UID to be decided at all).
		shim = shim.DeepCopy()
		shim.UID = newShimUID
	}
	set := classSet(shim, existing)
	installed := []decide.NodeView{{Node: &corev1.Node{}, Label: nodelabel.Installed}}
	cp := decide.Classes(&decide.Snapshot{Shim: shim, Classes: set, Views: installed}, false)
	canary := shimspec.CanaryRuntimeClass(shim.Name)
	taken, conflicts := map[string]*nodev1.RuntimeClass{}, map[string]bool{}
	for _, t := range cp.Takeovers {
		taken[t.Spec.Name] = t.Step.Read
	}
	for _, w := range cp.Warnings {
		conflicts[w.Class.Name] = true
	}
	var out []ClassPreview
	for _, d := range cp.Deletes {
		if d.Class.Name != canary {
			out = append(out, ClassPreview{Name: d.Class.Name, Handler: d.Class.Handler, Action: ClassDelete})
		}
	}
	for _, spec := range shimspec.Classes(shim) {
		c := ClassPreview{Name: spec.Name, Handler: spec.Handler, Action: ClassUnchanged}
		read, _ := set.Read(spec.Name)
		switch {
		case taken[spec.Name] != nil:
			c.Action, c.Owner = ClassTakeOver, ownerOf(taken[spec.Name])
		case conflicts[spec.Name] || read != nil && !runtimeclass.Owned(read, shim.UID):
			c.Action, c.Owner = ClassConflict, ownerOf(read)
		default:
			c.Action = classAction(cp, spec.Name)
		}
		out = append(out, c)
	}
	return out
}

// newShimUID stands for the UID of a Shim not created yet, in a preview.
const newShimUID = "00000000-0000-4000-8000-000000000000"

// classAction is the preview action of the class's publish step.
func classAction(cp decide.ClassPlan, name string) string {
	for _, e := range cp.Ensures {
		if e.Spec.Name != name {
			continue
		}
		switch e.Step.Result {
		case runtimeclass.Created, runtimeclass.Absent:
			return ClassCreate
		case runtimeclass.Updated, runtimeclass.Replaced, runtimeclass.Retry:
			return ClassUpdate
		}
	}
	return ClassUnchanged
}

func ownerOf(rc *nodev1.RuntimeClass) string {
	for _, o := range rc.OwnerReferences {
		if o.Controller != nil && *o.Controller {
			return o.Kind + " " + o.Name
		}
	}
	return ""
}
