package shimspec

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// Errors of a spec the operator refuses to roll out (BuildPlan returns
// them too, wrapped with the field they name).
var (
	// ErrReserved: a handler names a runtime type of containerd's own
	// shims (v1alpha1.ReservedRuntimeTypes) without
	// runtimeOptions.BinaryName, or with a runtimePath.
	ErrReserved = errors.New("reserved for containerd's own shims")
	// ErrPullSecretNamespace: spec.fetchStrategy.oci.pullSecretRef names
	// a namespace other than the operator's, where the Jobs run.
	ErrPullSecretNamespace = errors.New("the pull secret is not in the operator's namespace")
)

// Refusal is why the operator rolls a spec out to no node: a Degraded
// reason and a message that names the field.
type Refusal struct {
	Reason  string
	Message string
}

// Shown reports whether the Shim's status already shows the Refusal: its
// Degraded condition, of the current generation, has the Refusal's reason
// and message. The Refusal's Warning Event went out when it first showed;
// a Refusal that stands makes no further Events (each would be a new
// Event object: the Shim's resourceVersion, part of what the events API
// folds by, changes with every status write).
func (ref *Refusal) Shown(shim *v1alpha1.Shim) bool {
	c := meta.FindStatusCondition(shim.Status.Conditions, v1alpha1.ConditionDegraded)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == shim.Generation && c.Reason == ref.Reason && c.Message == ref.Message
}

// RefusalOf checks what the CRD's rules cannot: nil when the spec can be
// rolled out. The API server's CEL cannot read keys of runtimeOptions (a
// free-form object), nor knows the operator's namespace.
func RefusalOf(shim *v1alpha1.Shim, o Settings) *Refusal {
	err := Validate(shim, o)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrPullSecretNamespace):
		return &Refusal{Reason: v1alpha1.ReasonPullSecretNamespace, Message: err.Error()}
	case errors.Is(err, ErrReserved):
		return &Refusal{Reason: v1alpha1.ReasonReservedRuntimeType, Message: err.Error()}
	}
	return &Refusal{Reason: v1alpha1.ReasonInvalidSpec, Message: err.Error()}
}

// Validate returns the first reason the Shim cannot be installed on
// any node, naming the field.
func Validate(shim *v1alpha1.Shim, o Settings) error {
	if err := checkPullSecret(shim, o.Namespace); err != nil {
		return err
	}
	if err := checkMigrateFrom(shim); err != nil {
		return err
	}
	if err := checkRolloutRules(shim); err != nil {
		return err
	}
	if err := checkCRIO(shim); err != nil {
		return err
	}
	if err := checkSchedulingLabel(shim); err != nil {
		return err
	}
	return checkReservedTypes(shim)
}

// checkPullSecret refuses a pull secret outside namespace. The Job that
// mounts it runs there, and a pod mounts only Secrets of its own
// namespace; honouring another namespace would mean copying Secrets
// across namespaces (the operator reading every Secret of the cluster),
// or handing the installer a token to read them: more privilege than the
// field is worth. An empty namespace (an embedder's BuildPlan) is not
// checked.
func checkPullSecret(shim *v1alpha1.Shim, namespace string) error {
	oci := shim.Spec.FetchStrategy.Registry()
	if namespace == "" || oci == nil || oci.PullSecretRef == nil {
		return nil
	}
	if ns := oci.PullSecretRef.Namespace; ns != "" && ns != namespace {
		return fmt.Errorf("spec.fetchStrategy.%s.pullSecretRef.namespace: %q: %w %q, where the installer Jobs run and mount it from: create Secret %s in %s, or leave the namespace empty",
			shim.Spec.FetchStrategy.Type, ns, ErrPullSecretNamespace, namespace, oci.PullSecretRef.Name, namespace)
	}
	return nil
}

// checkReservedTypes refuses a handler of a runtime type of containerd's
// own shims unless it runs the bundle's OCI runtime through that shim
// (runtimeOptions.BinaryName) and names no runtimePath: the bundle must
// never provide the shim containerd starts for every runc pod.
func checkReservedTypes(shim *v1alpha1.Shim) error {
	for i, h := range shim.Spec.HandlerSpecs() {
		rt := HandlerRuntimeType(h)
		if !v1alpha1.IsReservedRuntimeType(rt) {
			continue
		}
		field := "spec"
		if i > 0 {
			field = fmt.Sprintf("spec.handlers[%d]", i-1)
		}
		if h.RuntimePath != "" {
			return fmt.Errorf("%s.runtimePath: %q with runtimeType %s: %w; the shim is containerd's own, the bundle provides only the OCI runtime", field, h.RuntimePath, rt, ErrReserved)
		}
		opts, err := options(h.RuntimeOptions)
		if err != nil {
			return fmt.Errorf("%s.runtimeOptions: %w", field, err)
		}
		if name, _ := opts[v1alpha1.BinaryNameOption].(string); name == "" {
			return fmt.Errorf("%s.runtimeOptions.%s: not set, and runtimeType %s is %w: a Shim names it only to run its bundle's OCI runtime with containerd's shim, set as %s",
				field, v1alpha1.BinaryNameOption, rt, ErrReserved, v1alpha1.BinaryNameOption)
		}
	}
	return nil
}
