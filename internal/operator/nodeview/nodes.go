package nodeview

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// PendingTaint is the startup taint a node pool may put on joining nodes
// (operator.PendingTaint).
const PendingTaint = "shim.containerd.x-k8s.io/pending"

// ForceRolloutAnnotation on a node ("true") lets it change outside the
// maintenance windows (operator.ForceRolloutAnnotation).
const ForceRolloutAnnotation = "shim.containerd.x-k8s.io/force-rollout"

// HasPendingTaint: the node has the startup taint.
func HasPendingTaint(node *corev1.Node) bool {
	return slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == PendingTaint })
}

// ControlPlaneLabel marks a control-plane node: one is matched only by a
// selector that names it.
const ControlPlaneLabel = "node-role.kubernetes.io/control-plane"

// Matches reports whether a node is targeted by the Shim: its selector,
// and no control-plane node unless the selector names that label. A
// matching node is installed only when it is also eligible (eligibility).
// Preinstalled: the node's image has the shim (fetchStrategy.type
// Preinstalled, or the node has every label of spec.preinstalledOn).
func Preinstalled(shim *v1alpha1.Shim, node *corev1.Node) bool {
	on := shim.Spec.PreinstalledOn
	return shim.Spec.FetchStrategy.Type == v1alpha1.FetchPreinstalled ||
		len(on) > 0 && labels.SelectorFromSet(on).Matches(labels.Set(node.Labels))
}

func Matches(shim *v1alpha1.Shim, node *corev1.Node) bool {
	sel := shim.Spec.NodeSelector
	if _, named := sel[ControlPlaneLabel]; !named {
		if _, cp := node.Labels[ControlPlaneLabel]; cp {
			return false
		}
	}
	return labels.SelectorFromSet(sel).Matches(labels.Set(node.Labels))
}

// SpecHash identifies what is installed on a node: everything of the spec
// that reaches the installer (targetHash adds the resolved artifact). The rollout strategy, the node selector and
// the RuntimeClasses' names and tolerations are not part of it. Fields
// added with bundles (and adoption) are left out when empty, so that a
// Shim of before keeps its hash (and an operator upgrade reinstalls no
// node). Adoption and migration are part of it: asking for either after a
// node refused the install (Conflict) starts a new round.
func SpecHash(shim *v1alpha1.Shim) string {
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
		s.FetchStrategy, s.RuntimeClass.HandlerName(), RuntimeType(shim), rawOptions(shim), s.RuntimePath, s.PodAnnotations, s.PrivilegedWithoutHostDevices,
		s.ContainerAnnotations, s.Snapshotter, s.Sandboxer, s.IOType, s.Files, handlers, s.Sandboxers, s.RuntimeClass.AdoptHandler,
		MigrateFrom(s.MigrateFrom),
	})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:16]
}

// CanaryHash identifies the Shim's canary settings (spec.canary, on or
// off included): it is not part of the spec hash, so changing it
// reinstalls no node, but a node whose canary failed is tried again with
// the new one.
func CanaryHash(shim *v1alpha1.Shim) string {
	c := v1alpha1.Canary{}
	if shim.Spec.Canary != nil {
		c = *shim.Spec.Canary
	}
	c.Enabled = ptr.To(shim.Spec.CanaryEnabled())
	data, _ := json.Marshal(c)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:16]
}

// MigrateFrom identifies the migration in the spec hash: the group and
// name of the runtime-class-manager Shim ("" without one).
func MigrateFrom(m *v1alpha1.MigrateFrom) string {
	if m == nil {
		return ""
	}
	return "runtime-class-manager:" + m.RuntimeClassManager.Group() + "/" + m.RuntimeClassManager.Shim
}

func RuntimeType(shim *v1alpha1.Shim) string {
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

// PlatformOf returns a node's platform as the installer names it.
func PlatformOf(node *corev1.Node) string {
	arch := node.Labels[corev1.LabelArchStable]
	if arch == "" {
		arch = node.Status.NodeInfo.Architecture
	}
	return "linux/" + arch
}
