package operator

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/internal/operator/nodeview"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// What the operator's users name of the Shim spec's meaning (package
// shimspec holds it).
var (
	// ErrNoArtifact: the Shim names no artifact for the node's platform.
	ErrNoArtifact = shimspec.ErrNoArtifact
	// ErrNotPinned: an image named by a tag has no digest yet.
	ErrNotPinned = shimspec.ErrNotPinned
	// ErrReserved: a handler names a runtime type of containerd's own
	// shims without runtimeOptions.BinaryName, or with a runtimePath.
	ErrReserved = shimspec.ErrReserved
	// ErrPullSecretNamespace: the pull secret is not in the operator's
	// namespace.
	ErrPullSecretNamespace = shimspec.ErrPullSecretNamespace
)

// RCMKind and RCMVersion are the kind and version of runtime-class-manager's
// Shim, in either of its groups (v1alpha1.RCMGroup, v1alpha1.RCMGroupKWasm).
const (
	RCMKind    = shimspec.RCMKind
	RCMVersion = shimspec.RCMVersion
)

// DefaultCanaryTimeout bounds a canary whose spec names no timeout.
const DefaultCanaryTimeout = shimspec.DefaultCanaryTimeout

// BuildPlan returns the NodePlan that installs the Shim on the node or
// removes it, with the operator's options (shimspec.BuildPlan says what
// it defaults and refuses).
func BuildPlan(shim *v1alpha1.Shim, node *corev1.Node, op plan.Operation, o Options) (*plan.NodePlan, error) {
	return shimspec.BuildPlan(shim, node, op, o.settings())
}

// CanaryRuntimeClass names the RuntimeClass of a Shim's canary pods.
func CanaryRuntimeClass(shim string) string { return shimspec.CanaryRuntimeClass(shim) }

// RCMLabelValues are the values of runtime-class-manager's node label.
func RCMLabelValues() []string { return shimspec.RCMLabelValues() }

// settings are what a plan takes of the options.
func (o Options) settings() shimspec.Settings {
	return shimspec.Settings{InstallerImage: o.InstallerImage, Namespace: o.Namespace, Preset: o.Preset, ConfigMode: o.ConfigMode, RestartTimeout: o.RestartTimeout}
}

// PendingTaint is the startup taint a node pool may put on joining nodes
// (effect NoSchedule) so that no workload lands before its runtimes: the
// operator removes it once every Shim that selects the node is installed
// there at that Shim's current spec. Installer Jobs tolerate it.
const PendingTaint = nodeview.PendingTaint

// ForceRolloutAnnotation on a node ("true") lets it change outside the
// maintenance windows (spec.rolloutStrategy.windows): an admin's way to
// install, upgrade or uninstall one node now. A pause still holds it.
const ForceRolloutAnnotation = nodeview.ForceRolloutAnnotation
