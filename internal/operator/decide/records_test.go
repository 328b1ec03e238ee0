package decide

import (
	"fmt"
	"slices"
	"testing"
	"time"

	kittest "github.com/shimkit/shimkit/internal/testutil"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// describeActs flattens a decision's actions into one line each, in the
// order act carries them out ("|" joins the ones that run together).
func describeActs(acts []Action) []string {
	var out []string
	for _, a := range acts {
		switch a := a.(type) {
		case Together:
			var parts []string
			for _, p := range a {
				parts = append(parts, describeActs([]Action{p})...)
			}
			if len(parts) > 0 {
				out = append(out, "together: "+fmt.Sprint(parts))
			}
		case InOrder:
			out = append(out, describeActs(a)...)
		case DeleteJob:
			out = append(out, "delete Job "+a.Job.Name+" of "+a.Node)
		case ClearFailure:
			out = append(out, "clear failure of "+a.Node)
		case PatchJob:
			out = append(out, "end Job "+a.Job.Name+" of "+a.Node+": "+a.Reason)
		case MarkInstalled:
			out = append(out, "mark "+a.Node.Name+" installed at "+a.SpecHash)
		case Unmark:
			out = append(out, "unmark "+a.Node)
		case MarkFailed:
			out = append(out, "mark "+a.Node+" failed: "+a.Failure.Reason)
		case MarkVerified:
			out = append(out, fmt.Sprintf("mark %s verified (drift %v)", a.Node, a.Found.Drift))
		case Notice:
			about := ""
			if a.About != nil {
				about = " about " + a.About.Name
			}
			out = append(out, "event "+a.Type+" "+a.Reason+about+": "+a.Note)
		case CountDrift:
			out = append(out, "count drift "+a.Shim+" "+a.Node)
		case Note:
			out = append(out, "note "+a.Reason+": "+a.Detail)
		case CountJob:
			out = append(out, "count Job "+a.Job.Object.Name)
		case KeepLog:
			out = append(out, "keep log of "+a.Job.Name+" ("+a.Reason+")")
		case DropRecords:
			out = append(out, fmt.Sprintf("drop records %v of %s", a.Keys, a.Node))
		case Untaint:
			out = append(out, "untaint "+a.Node.Name)
		case RememberRetry:
			out = append(out, fmt.Sprintf("remember retry %s (%d Jobs)", a.Request, len(a.Jobs)))
		default:
			out = append(out, fmt.Sprintf("%T", a))
		}
	}
	return out
}

// recordsObs is a snapshot of the Shim spin at hash h1 with a view per
// node, each with the Job given (nil: none).
func recordsObs(shim *v1alpha1.Shim, jobs map[string]*jobview.View, failures map[string]*nodelabel.Failure) *Snapshot {
	obs := &Snapshot{Shim: shim, Hash: "h1", SpecHash: "h1", Now: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range jobs {
			if !yield(n) {
				return
			}
		}
	}) {
		v := NodeViewOf(shim, nodeAt(name, "a", "", nil), "")
		if j := jobs[name]; j != nil {
			j.Object.Name = "job-" + name
			switch j.Op {
			case jobview.OpVerify:
				v.Verify = j
			case jobview.OpUninstall:
				v.Job, v.Label, v.SpecHash = j, LabelUninstalling, "h1"
			default:
				v.Job = j
			}
		}
		v.Failure = failures[name]
		obs.Views = append(obs.Views, v)
	}
	obs.Fresh = make([]bool, len(obs.Views))
	return obs
}

func succeeded(op string, res *plan.NodeResult) *jobview.View {
	j := kittest.FinishedJob("uid-"+op, op, false, res)
	j.SpecHash = "h1"
	return j
}

func failed(reason plan.Reason) *jobview.View {
	j := failedJob(jobview.OpInstall, "h1", "", reason)
	j.Object.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue}}
	return j
}

// logKept marks the failed Job's log kept (jobview.AnnotationLogKept).
func logKept(j *jobview.View) *jobview.View {
	j.Object.Annotations = map[string]string{jobview.AnnotationLogKept: "true"}
	j.LogKept = true
	return j
}

// TestDecideRecords: what a reconcile writes of the Jobs that finished and
// of a retry request, decided from the snapshot alone, in order; and the
// views left as those writes will leave the nodes.
func TestDecideRecords(t *testing.T) {
	shim := decideShim()
	retryShim := decideShim()
	retryShim.Annotations = map[string]string{v1alpha1.RetryAnnotation: "all@1"}
	oldFailure := &nodelabel.Failure{ShimUID: shim.UID, Op: jobview.OpInstall, SpecHash: "h1", Reason: string(plan.ReasonRestartFailed), Job: "job-old"}
	for _, tc := range []struct {
		name     string
		shim     *v1alpha1.Shim
		jobs     map[string]*jobview.View
		failures map[string]*nodelabel.Failure
		fresh    bool
		want     []string
		// label, failure: each view's label and whether it keeps a failure.
		labels   map[string]string
		failedOn []string
	}{
		{name: "nothing finished", shim: shim, jobs: map[string]*jobview.View{"n1": nil},
			want: []string{}, labels: map[string]string{"n1": ""}},
		{name: "install succeeded", shim: shim, jobs: map[string]*jobview.View{"n1": succeeded(jobview.OpInstall, &plan.NodeResult{Outcome: plan.Succeeded, Digest: "sha256:ab"})},
			want:   []string{"together: [mark n1 installed at h1 note Installed: node n1 (spec h1, sha256:ab) count Job job-n1]"},
			labels: map[string]string{"n1": nodelabel.Installed}},
		{name: "uninstall succeeded", shim: shim, jobs: map[string]*jobview.View{"n1": succeeded(jobview.OpUninstall, nil)},
			want:   []string{"together: [unmark n1 note Uninstalled: node n1 count Job job-n1]"},
			labels: map[string]string{"n1": ""}},
		{name: "install failed, result read now: reported once", shim: shim, fresh: true, jobs: map[string]*jobview.View{"n1": failed(plan.ReasonConfigInvalid)},
			want:   []string{"together: [event Warning InstallFailed: node n1: ConfigInvalid mark n1 failed: ConfigInvalid count Job job-n1 keep log of job-n1 (ConfigInvalid)]"},
			labels: map[string]string{"n1": ""}, failedOn: []string{"n1"}},
		{name: "failure already recorded, its log kept: nothing", shim: shim,
			jobs:     map[string]*jobview.View{"n1": logKept(failed(plan.ReasonRestartFailed))},
			failures: map[string]*nodelabel.Failure{"n1": {ShimUID: shim.UID, Op: jobview.OpInstall, SpecHash: "h1", Reason: string(plan.ReasonRestartFailed), Job: "job-n1"}},
			want:     []string{}, labels: map[string]string{"n1": ""}, failedOn: []string{"n1"}},
		{name: "failure recorded by an operator that stopped before keeping its log: kept now", shim: shim,
			jobs:     map[string]*jobview.View{"n1": failed(plan.ReasonRestartFailed)},
			failures: map[string]*nodelabel.Failure{"n1": {ShimUID: shim.UID, Op: jobview.OpInstall, SpecHash: "h1", Reason: string(plan.ReasonRestartFailed), Job: "job-n1"}},
			want:     []string{"together: [keep log of job-n1 (RestartFailed)]"}, labels: map[string]string{"n1": ""}, failedOn: []string{"n1"}},
		{name: "an older failure recorded: the new one recorded, its log kept", shim: shim,
			jobs:     map[string]*jobview.View{"n1": failed(plan.ReasonRestartFailed)},
			failures: map[string]*nodelabel.Failure{"n1": oldFailure},
			want:     []string{"together: [mark n1 failed: RestartFailed count Job job-n1 keep log of job-n1 (RestartFailed)]"}, labels: map[string]string{"n1": ""}, failedOn: []string{"n1"}},
		{name: "verification found drift", shim: shim, jobs: map[string]*jobview.View{"n1": succeeded(jobview.OpVerify, &plan.NodeResult{Outcome: plan.Succeeded, Drift: []string{"/opt/shim changed"}})},
			want:   []string{"together: [mark n1 verified (drift [/opt/shim changed]) count Job job-n1]"},
			labels: map[string]string{"n1": ""}},
		{name: "retry all: the failed Job goes and the record is cleared", shim: retryShim,
			jobs:     map[string]*jobview.View{"n1": failed(plan.ReasonRestartFailed), "n2": nil},
			failures: map[string]*nodelabel.Failure{"n1": oldFailure},
			want: []string{"together: [delete Job job-n1 of n1 clear failure of n1]", "remember retry all@1 (1 Jobs)",
				"event Normal Retry: retrying 1 failed nodes (all@1): n1"},
			labels: map[string]string{"n1": "", "n2": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := recordsObs(tc.shim.DeepCopy(), tc.jobs, tc.failures)
			for i := range obs.Fresh {
				obs.Fresh[i] = tc.fresh
			}
			obs, acts, err := Records(obs)
			if err != nil {
				t.Fatal(err)
			}
			got := describeActs(acts)
			if got == nil {
				got = []string{}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			var failedOn []string
			for _, v := range obs.Views {
				if v.Label != tc.labels[v.Node.Name] {
					t.Errorf("node %s: label %q, want %q", v.Node.Name, v.Label, tc.labels[v.Node.Name])
				}
				if v.Failure != nil {
					failedOn = append(failedOn, v.Node.Name)
				}
			}
			if !slices.Equal(failedOn, tc.failedOn) {
				t.Errorf("failed nodes %v, want %v", failedOn, tc.failedOn)
			}
		})
	}
}

// TestDecideStuckPulls: an image Shim's running Job whose pod cannot pull
// is ended with that failure; the Shim is looked at again within
// PullCheck while its Jobs run.
func TestDecideStuckPulls(t *testing.T) {
	shim := decideShim()
	shim.Spec.FetchStrategy = v1alpha1.FetchStrategy{Type: v1alpha1.FetchImage, Image: &v1alpha1.OCIFetch{Reference: "example.invalid/spin:1"}}
	running := func() *jobview.View {
		j := jobview.ViewOf(&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{jobview.LabelOp: jobview.OpInstall}}})
		j.SpecHash = "h1"
		return j
	}
	obs := recordsObs(shim, map[string]*jobview.View{"n1": running(), "n2": running(), "n3": nil}, nil)
	obs.Pulls = map[string]*plan.NodeResult{"n2": {Outcome: plan.Failed, Reason: plan.ReasonImagePullFailed, Message: "not found"}}
	acts, err := StuckPulls(obs)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"together: [end Job job-n2 of n2: ImagePullFailed]"}, describeActs(acts)); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	if want := obs.Now.Add(PullCheck); !obs.Due.Equal(want) {
		t.Errorf("due %v, want %v", obs.Due, want)
	}
	shim.Spec.FetchStrategy = decideShim().Spec.FetchStrategy
	if acts, _ := StuckPulls(obs); len(acts) != 0 {
		t.Errorf("an HTTP Shim's Jobs: %v", describeActs(acts))
	}
}

// TestDecideNodeRecords: the label, record and taint writes of a reconcile
// (preinstalled nodes labelled and unlabelled, a predecessor's records and
// a reimaged node's label dropped, a deleted Shim's leftovers forgotten,
// startup taints released), decided from the snapshot alone.
func TestDecideNodeRecords(t *testing.T) {
	shim := decideShim()
	other := decideShim()
	other.Name, other.UID = "wasm", "uid-wasm"
	other.Status.SpecHash = "w1"
	tainted := func(n *corev1.Node) *corev1.Node {
		n.Spec.Taints = []corev1.Taint{{Key: nodeview.PendingTaint, Effect: corev1.TaintEffectNoSchedule}}
		return n
	}
	withWasm := func(n *corev1.Node) *corev1.Node {
		n.Labels[nodelabel.Key("wasm")] = nodelabel.Installed
		n.Annotations[nodelabel.Key("wasm")] = "w1"
		n.Annotations[nodelabel.VerifiedKey("wasm")] = `{"shimUID":"uid-wasm","specHash":"w1","time":"2026-11-25T06:00:00Z"}`
		return n
	}
	// declared: the labels a node pool declares, with nothing recorded.
	declared := func(n *corev1.Node, shims ...string) *corev1.Node {
		for _, s := range shims {
			delete(n.Annotations, nodelabel.VerifiedKey(s))
			n.Labels[nodelabel.Key(s)] = nodelabel.Installed
		}
		return n
	}
	for _, tc := range []struct {
		name   string
		nodes  []*corev1.Node
		setup  func(obs *Snapshot, d *Decision)
		decide func(obs *Snapshot, d *Decision) []Action
		want   []string
	}{
		{name: "preinstalled nodes labelled and unlabelled", nodes: []*corev1.Node{nodeAt("n1", "a", "", nil), nodeAt("n2", "a", "h0", nil)},
			setup: func(obs *Snapshot, d *Decision) {
				d.Label, d.Unlabel = []string{"n1"}, []string{"n2"}
				d.ByName["n2"].Skip = &nodeview.Skip{Reason: v1alpha1.SkipNoArtifact, Detail: "its image lacks handler spin"}
			},
			decide: Relabel,
			want: []string{"together: [mark n1 installed at h1 unmark n2]", "note Preinstalled: node n1 (its image serves the Shim's handlers)",
				"event Normal Unlabelled: node n2: its image lacks handler spin"}},
		{name: "a predecessor's records dropped, a reimaged node unlabelled", nodes: []*corev1.Node{nodeAt("n1", "a", "", nil), nodeAt("n2", "a", "h1", nil), nodeAt("n3", "a", "h1", nil)},
			setup: func(obs *Snapshot, d *Decision) {
				d.ByName["n1"].Stale = []string{"failure"}
				d.ByName["n2"].Reimaged = true
			},
			decide: func(obs *Snapshot, _ *Decision) []Action { return StaleRecords(obs) },
			want:   []string{"event Warning Reimaged: node n2 is another machine now (): it loses the shim's label and is installed again", "together: [drop records [failure] of n1 unmark n2]"}},
		{name: "a deleted Shim forgets the nodes it left something on", nodes: []*corev1.Node{nodeAt("n1", "a", "", nil), nodeAt("n2", "a", "h1", nil)},
			decide: func(obs *Snapshot, _ *Decision) []Action { return Forget(obs) },
			want:   []string{"together: [unmark n2]"}},
		{name: "the startup taint goes once every Shim selecting the node has it",
			nodes: []*corev1.Node{tainted(nodeAt("n1", "a", "h1", nil)), tainted(withWasm(nodeAt("n2", "a", "h1", nil))), tainted(nodeAt("n3", "a", "h0", nil))},
			setup: func(obs *Snapshot, _ *Decision) {
				// wasm selects n1 and n2; only n2 has it.
				wasm := other.DeepCopy()
				wasm.Spec.NodeSelector = map[string]string{"pool": "a"}
				obs.Shims = []v1alpha1.Shim{*obs.Shim, *wasm}
			},
			decide: func(obs *Snapshot, _ *Decision) []Action { return Taints(obs) },
			want:   []string{"together: [untaint n2]"}},
		{name: "the startup taint stays on a node whose labels a node pool declared, with no record of an install",
			nodes: []*corev1.Node{tainted(declared(nodeAt("n1", "a", "h1", nil), "spin")), tainted(declared(withWasm(nodeAt("n2", "a", "h1", nil)), "wasm")), tainted(withWasm(nodeAt("n3", "a", "h1", nil)))},
			setup: func(obs *Snapshot, _ *Decision) {
				wasm := other.DeepCopy()
				wasm.Spec.NodeSelector = map[string]string{"pool": "a"}
				obs.Shims = []v1alpha1.Shim{*obs.Shim, *wasm}
			},
			decide: func(obs *Snapshot, _ *Decision) []Action { return Taints(obs) },
			want:   []string{"together: [untaint n3]"}},
		{name: "a Shim refused for another's scheduling label is not waited for",
			nodes: []*corev1.Node{tainted(nodeAt("n1", "a", "h1", nil))},
			setup: func(obs *Snapshot, _ *Decision) {
				// wasm selects n1, and wants the label spin has had since before it.
				obs.Shim.Spec.SchedulingLabel = "example.com/runtime"
				wasm := other.DeepCopy()
				wasm.Spec.NodeSelector, wasm.Spec.SchedulingLabel = map[string]string{"pool": "a"}, "example.com/runtime"
				wasm.CreationTimestamp = metav1.NewTime(obs.Shim.CreationTimestamp.Add(time.Minute))
				obs.Shims = []v1alpha1.Shim{*obs.Shim, *wasm}
			},
			decide: func(obs *Snapshot, _ *Decision) []Action { return Taints(obs) },
			want:   []string{"together: [untaint n1]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := &Snapshot{Shim: shim.DeepCopy(), Hash: "h1", SpecHash: "h1", Now: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
			for _, n := range tc.nodes {
				obs.Views = append(obs.Views, NodeViewOf(obs.Shim, n, ""))
			}
			d := &Decision{ByName: map[string]*NodeView{}}
			for i := range obs.Views {
				d.ByName[obs.Views[i].Node.Name] = &obs.Views[i]
			}
			if tc.setup != nil {
				tc.setup(obs, d)
			}
			got := describeActs(tc.decide(obs, d))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
		})
	}
}
