package operator

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/rollout"
)

const controlPlaneLabel = "node-role.kubernetes.io/control-plane"

// labelUninstalling is the node label value while the shim is removed: the
// RuntimeClass no longer selects the node, so no new pod lands there.
const labelUninstalling = "uninstalling"

// matches reports whether a node is targeted by the Shim: its selector,
// and no control-plane node unless the selector names that label. A
// matching node is installed only when it is also eligible (eligibility).
func matches(shim *v1alpha1.Shim, node *corev1.Node) bool {
	sel := shim.Spec.NodeSelector
	if _, named := sel[controlPlaneLabel]; !named {
		if _, cp := node.Labels[controlPlaneLabel]; cp {
			return false
		}
	}
	return labels.SelectorFromSet(sel).Matches(labels.Set(node.Labels))
}

// specHash identifies what is installed on a node: everything of the spec
// that reaches the installer (targetHash adds the resolved artifact). The rollout strategy, the node selector and
// the RuntimeClasses' names and tolerations are not part of it. Fields
// added with bundles (and adoption) are left out when empty, so that a
// Shim of before keeps its hash (and an operator upgrade reinstalls no
// node). Adoption and migration are part of it: asking for either after a
// node refused the install (Conflict) starts a new round.
func specHash(shim *v1alpha1.Shim) string {
	s := shim.Spec
	// How often the artifact is resolved again is not what a node
	// installs; the resolved artifact enters through targetHash.
	s.FetchStrategy.ResolveInterval = nil
	handlers := make([]v1alpha1.HandlerSpec, len(s.Handlers))
	for i, h := range s.Handlers {
		h.RuntimeClass = v1alpha1.RuntimeClassSpec{Handler: h.RuntimeClass.HandlerName(), AdoptHandler: h.RuntimeClass.AdoptHandler}
		handlers[i] = h
	}
	data, _ := json.Marshal(struct {
		Fetch                v1alpha1.FetchStrategy
		Handler              string
		RuntimeType          string
		Options              []byte
		Path                 string
		Annotations          []string
		Priv                 bool
		ContainerAnnotations []string                 `json:",omitempty"`
		Snapshotter          string                   `json:",omitempty"`
		Sandboxer            string                   `json:",omitempty"`
		IOType               string                   `json:",omitempty"`
		Files                []v1alpha1.BundleFile    `json:",omitempty"`
		Handlers             []v1alpha1.HandlerSpec   `json:",omitempty"`
		Sandboxers           []v1alpha1.SandboxerSpec `json:",omitempty"`
		Adopt                bool                     `json:",omitempty"`
		Migrate              string                   `json:",omitempty"`
	}{
		s.FetchStrategy, s.RuntimeClass.HandlerName(), runtimeType(shim), rawOptions(shim), s.RuntimePath, s.PodAnnotations, s.PrivilegedWithoutHostDevices,
		s.ContainerAnnotations, s.Snapshotter, s.Sandboxer, s.IOType, s.Files, handlers, s.Sandboxers, s.RuntimeClass.AdoptHandler,
		migrateFrom(s.MigrateFrom),
	})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:16]
}

// canaryHash identifies the Shim's canary settings (spec.canary, on or
// off included): it is not part of the spec hash, so changing it
// reinstalls no node, but a node whose canary failed is tried again with
// the new one.
func canaryHash(shim *v1alpha1.Shim) string {
	c := v1alpha1.Canary{}
	if shim.Spec.Canary != nil {
		c = *shim.Spec.Canary
	}
	c.Enabled = ptr.To(shim.Spec.CanaryEnabled())
	data, _ := json.Marshal(c)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:16]
}

// migrateFrom identifies the migration in the spec hash: the group and
// name of the runtime-class-manager Shim ("" without one).
func migrateFrom(m *v1alpha1.MigrateFrom) string {
	if m == nil {
		return ""
	}
	return "runtime-class-manager:" + m.RuntimeClassManager.Group() + "/" + m.RuntimeClassManager.Shim
}

func runtimeType(shim *v1alpha1.Shim) string {
	if shim.Spec.RuntimeType != "" {
		return shim.Spec.RuntimeType
	}
	return "io.containerd." + shim.Spec.RuntimeClass.HandlerName() + ".v2"
}

func rawOptions(shim *v1alpha1.Shim) []byte {
	if shim.Spec.RuntimeOptions == nil {
		return nil
	}
	return shim.Spec.RuntimeOptions.Raw
}

// nodeView is what the reconciler knows of one node for one Shim.
type nodeView struct {
	node     *corev1.Node
	matching bool
	// skip says why a matching node cannot run the shim (nil: it can).
	skip     *skip
	label    string // the shim's label value: "", installed, uninstalling
	specHash string // the annotation: the hash installed
	// failure is the failure recorded on the node (nodelabel.Failure):
	// what is left of a failed Job once it is garbage collected.
	failure *nodelabel.Failure
	job     *jobView
	// held: a Job carrying the Shim's plan runs on the node that the cache
	// does not show yet (the node gate's hold): the node is changing.
	held bool
	// verify is the node's newest verifying Job (nil: none in the cache);
	// verified the node's record of its last verification.
	verify   *jobView
	verified *nodelabel.Verification
	// stale are the keys of records on the node that another Shim object
	// of the same name left (nodelabel.RecordsOf): dropped.
	stale []string
	// plan is the node's install plan, built when the node needs one;
	// planErr says why none could be built.
	plan    *plan.NodePlan
	planErr error
	// canary is the hash of the Shim's canary now (canaryHash).
	canary string
	// drifted says what drifted on a node labelled as having the Shim at
	// the target (a handler its kubelet no longer reports, or what its last
	// verification found): it is installed again ("": no drift).
	drifted string
}

// targeted: the node matches the selector and can run the shim.
func (v nodeView) targeted() bool { return v.matching && v.skip == nil }

// installed: the node has the shim at some hash (its label says so).
func (v nodeView) installed() bool { return v.label != "" }

// touched: the node has the shim, or a Job is changing it.
func (v nodeView) touched() bool { return v.installed() || v.job != nil && v.job.running() }

// state maps a node to the planner's states.
func (v nodeView) state(current string, removing bool) rollout.State {
	if v.held {
		if removing {
			return rollout.Uninstalling
		}
		return rollout.Installing
	}
	if j := v.job; j != nil {
		switch {
		case j.running():
			if j.op == opUninstall {
				return rollout.Uninstalling
			}
			return rollout.Installing
		case j.sibling():
			// Undone with another Shim's plan: as before the Job.
		case j.failed():
			reason, _ := j.failure()
			if removing == (j.op == opUninstall) && (j.op == opUninstall || j.specHash == current) && !v.canaryChanged(reason, j.canary) {
				return rollout.Failed
			}
		}
	} else if f := v.failure; f != nil && removing == (f.Op == opUninstall) && (f.Op == opUninstall || f.SpecHash == current) && !v.canaryChanged(f.Reason, f.Canary) {
		return rollout.Failed // the Job is gone; the node's record stands
	}
	if v.installed() {
		return rollout.Installed
	}
	return rollout.Absent
}

// canaryChanged: the node failed its canary (reason), run with the canary
// of hash ran, and the Shim's canary has changed since (spec.canary): the
// failure says nothing about the new canary, and the node is tried again
// (not the nodes installed: the canary is not part of the spec hash).
func (v nodeView) canaryChanged(reason, ran string) bool {
	return reason == string(plan.ReasonCanaryFailed) && ran != v.canary
}

// needsInstall: the node lacks the current spec and nothing is changing
// it.
func (v nodeView) needsInstall(current string) bool {
	st := v.state(current, false)
	return st == rollout.Absent || st == rollout.Installed && (v.specHash != current || v.drifted != "")
}

func (v nodeView) plannerNode(current string, removing bool) rollout.Node {
	if v.planErr != nil && !removing {
		return rollout.Node{Name: v.node.Name, UID: string(v.node.UID), State: rollout.Failed, SpecHash: current}
	}
	st := v.state(current, removing)
	hash := v.specHash
	switch {
	case (st == rollout.Failed || st == rollout.Installing) && v.job != nil:
		hash = v.job.specHash
	case st == rollout.Failed:
		hash = v.failure.SpecHash
	case st == rollout.Installed && v.drifted != "":
		hash = "" // not what it was installed at any more: installed again
	}
	return rollout.Node{Name: v.node.Name, UID: string(v.node.UID), State: st, SpecHash: hash}
}

func viewNode(shim *v1alpha1.Shim, node *corev1.Node, canary string) nodeView {
	v := nodeView{node: node, matching: matches(shim, node), canary: canary}
	if v.matching {
		v.skip = eligibility(shim, node)
	}
	v.label = node.Labels[nodelabel.Key(shim.Name)]
	v.specHash = node.Annotations[nodelabel.Key(shim.Name)]
	recs := nodelabel.RecordsOf(node, shim.Name, shim.UID)
	v.failure, v.verified, v.stale = recs.Failure, recs.Verification, recs.Stale
	if recs.LabelledByOther {
		// A predecessor of the same name's, at a spec unknown: installed
		// again (an upgrade), which makes the label this Shim's.
		v.specHash = ""
	}
	return v
}

// platformOf returns a node's platform as the installer names it.
func platformOf(node *corev1.Node) string {
	arch := node.Labels[corev1.LabelArchStable]
	if arch == "" {
		arch = node.Status.NodeInfo.Architecture
	}
	return "linux/" + arch
}
