package shimspec

import (
	"fmt"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/classstep"
	"github.com/shimkit/shimkit/internal/operator/health"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/rollout"
	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/internal/nodelabel/record"
)

// Finalizer keeps a deleted Shim until its nodes are clean
// (operator.Finalizer).
const Finalizer = "shim.containerd.x-k8s.io/uninstall"

// RCMKind and RCMVersion are the kind and version of runtime-class-manager's
// Shim, in either of its groups (v1alpha1.RCMGroup, v1alpha1.RCMGroupKWasm).
const (
	RCMKind    = "Shim"
	RCMVersion = "v1alpha1"
)

// RolloutRules reads the Shim's maintenance windows and steps, naming the
// field that is wrong (an unknown time zone passes the API server's
// validation: the spec is refused, InvalidSpec).
func RolloutRules(shim *v1alpha1.Shim) (rollout.Windows, rollout.Steps, error) {
	rs := shim.Spec.RolloutStrategy
	if rs == nil {
		return nil, nil, nil
	}
	var ws rollout.Windows
	for i, w := range rs.Windows {
		pw, err := rollout.ParseWindow(w.Days, w.Start, w.End, w.TimeZone)
		if err != nil {
			return nil, nil, fmt.Errorf("spec.rolloutStrategy.windows[%d]: %w", i, err)
		}
		ws = append(ws, pw)
	}
	var ss rollout.Steps
	for i, s := range rs.Steps {
		st := rollout.Step{Nodes: s.Nodes}
		if s.Bake != nil {
			st.Bake = s.Bake.Duration
		}
		if _, err := st.Count(1); err != nil {
			return nil, nil, fmt.Errorf("spec.rolloutStrategy.steps[%d]: %w", i, err)
		}
		ss = append(ss, st)
	}
	return ws, ss, nil
}

// checkRolloutRules refuses rules that cannot be read.
func checkRolloutRules(shim *v1alpha1.Shim) error {
	_, _, err := RolloutRules(shim)
	return err
}

// FailurePolicy is the Shim's onFailure (default Halt).
func FailurePolicy(shim *v1alpha1.Shim) v1alpha1.FailurePolicy {
	if rs := shim.Spec.RolloutStrategy; rs != nil && rs.OnFailure != "" {
		return rs.OnFailure
	}
	return v1alpha1.FailureHalt
}

// RCMLabelValues are the values runtime-class-manager gives its node label
// (the bare key <its Shim's name>): provisioned once its install Job
// succeeded, pending while it runs, failed when it failed, uninstall while
// its uninstall Job runs. Each of them says its installer may have been on
// the node; any other value is not its.
func RCMLabelValues() []string { return []string{"provisioned", "pending", "failed", "uninstall"} }

// HasRCMLabel reports whether the node carries runtime-class-manager's
// label for its Shim name.
func HasRCMLabel(node *corev1.Node, rcmShim string) bool {
	v, ok := node.Labels[rcmShim]
	if !ok {
		return false
	}
	for _, want := range RCMLabelValues() {
		if v == want {
			return true
		}
	}
	return false
}

// migrationFor is the Migrate of the node's install plan: set when the
// Shim replaces a runtime-class-manager Shim, the node carries that one's
// label and shimkit has not installed the node (no label of the Shim's).
func migrationFor(shim *v1alpha1.Shim, node *corev1.Node) *plan.Migration {
	m := shim.Spec.MigrateFrom
	if m == nil {
		return nil
	}
	if _, ours := node.Labels[record.Key(shim.Name)]; ours || !HasRCMLabel(node, m.RuntimeClassManager.Shim) {
		return nil
	}
	return &plan.Migration{From: plan.FromRuntimeClassManager, Handler: shim.Spec.RuntimeClass.HandlerName()}
}

// checkMigrateFrom refuses a migration whose runtime-class-manager Shim is
// not the primary handler (the API server's CEL says the same; an
// embedder's BuildPlan has no API server).
func checkMigrateFrom(shim *v1alpha1.Shim) error {
	m := shim.Spec.MigrateFrom
	if m == nil {
		return nil
	}
	rcm, h := m.RuntimeClassManager.Shim, shim.Spec.RuntimeClass.HandlerName()
	if rcm != h {
		return fmt.Errorf("spec.migrateFrom.runtimeClassManager.shim: %q is not the handler %q: runtime-class-manager registered the handler under the name of its Shim; set spec.runtimeClass.handler to %q", rcm, h, rcm)
	}
	return nil
}

// RCMPredecessor is the runtime-class-manager Shim a RuntimeClass is taken
// over from, without its UID.
func RCMPredecessor(m *v1alpha1.MigrateFrom) classstep.Predecessor {
	return classstep.Predecessor{Group: m.RuntimeClassManager.Group(), Kind: RCMKind, Name: m.RuntimeClassManager.Shim}
}

// Health gate defaults (spec.rolloutStrategy.healthGate).
const (
	DefaultMaxFailuresPerNode = 1
	DefaultMaxFailures        = 3
)

// Gate is the Shim's health gate: on when spec.rolloutStrategy sets
// healthGate or steps.
func Gate(shim *v1alpha1.Shim) (health.Thresholds, bool) {
	rs := shim.Spec.RolloutStrategy
	if rs == nil || rs.HealthGate == nil && len(rs.Steps) == 0 {
		return health.Thresholds{}, false
	}
	t := health.Thresholds{PerNode: DefaultMaxFailuresPerNode, Total: DefaultMaxFailures}
	if g := rs.HealthGate; g != nil {
		if g.MaxFailuresPerNode != nil {
			t.PerNode = int(*g.MaxFailuresPerNode)
		}
		if g.MaxFailures != nil {
			t.Total = int(*g.MaxFailures)
		}
	}
	return t, true
}

// PullSecretName is the Secret with the registry's credentials, if any.
func PullSecretName(shim *v1alpha1.Shim) string {
	if oci := shim.Spec.FetchStrategy.Registry(); oci != nil && oci.PullSecretRef != nil {
		return oci.PullSecretRef.Name
	}
	return ""
}

// TrustedRootRef names the ConfigMap of the Shim's keyless trusted root
// ("" without one).
func TrustedRootRef(shim *v1alpha1.Shim) string {
	if v := shim.Spec.Verification; v != nil && v.Keyless != nil {
		return v.Keyless.TrustedRootRef.Name + "/" + TrustedRootKey(v.Keyless.TrustedRootRef)
	}
	return ""
}

// Planner plans the rollout of Target (the spec's hash with the artifact
// pinned for it, TargetHash) under the Shim's strategy.
func Planner(shim *v1alpha1.Shim, target string) rollout.Planner {
	rs := shim.Spec.RolloutStrategy
	s := rollout.Strategy{}
	if rs != nil {
		s.Recreate = rs.Type == v1alpha1.RolloutRecreate
		if rs.Rolling != nil {
			s.MaxUpdate = rs.Rolling.MaxUpdate
		}
	}
	return rollout.Planner{Strategy: s, ShimUID: string(shim.UID), SpecHash: target}
}

func TrustedRootKey(ref v1alpha1.ConfigMapKeyReference) string {
	if ref.Key == "" {
		return v1alpha1.DefaultTrustedRootKey
	}
	return ref.Key
}

// RolloutOf is what the status recorded of the rollout of target (nil: a
// rollout not started yet).
func RolloutOf(shim *v1alpha1.Shim, target string) *v1alpha1.RolloutStatus {
	if st := shim.Status.Rollout; st != nil && st.SpecHash == target {
		return st
	}
	return nil
}
