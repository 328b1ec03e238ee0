package shimspec

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
	"github.com/shimkit/shimkit/operator/nodeview"
)

// crioOptions are the runtimeOptions keys a handler may have on CRI-O:
// the OCI runtime's binary and root (an oci handler), a vm handler's
// config file, and the cgroup driver (node-wide on CRI-O, so ignored).
var crioOptions = []string{v1alpha1.BinaryNameOption, "Root", "ConfigPath", "SystemdCgroup"}

// planRuntime is the plan's runtime for the node: the one its kubelet
// reports, when it is one the installer knows ("": the installer detects
// it).
func planRuntime(node *corev1.Node) string {
	switch nodeview.RuntimeOf(node) {
	case v1alpha1.RuntimeContainerd:
		return plan.RuntimeContainerd
	case v1alpha1.RuntimeCRIO:
		return plan.RuntimeCRIO
	}
	return ""
}

// checkCRIO refuses, when the Shim lists cri-o, what CRI-O cannot run,
// naming the field: CRI-O has no sandboxers, no migration from
// runtime-class-manager (which installs into containerd alone), no
// adoption (a later drop-in replaces a handler whole), and per handler
// no snapshotter, sandboxer, ioType or annotations of containerd's, and
// runtimeOptions only of crioOptions.
func checkCRIO(shim *v1alpha1.Shim) error {
	if !shim.Spec.SupportsRuntime(v1alpha1.RuntimeCRIO) {
		return nil
	}
	const why = "spec.containerRuntimes lists cri-o, which has no such setting"
	switch {
	case len(shim.Spec.Sandboxers) > 0:
		return fmt.Errorf("spec.sandboxers: %s (sandboxers are containerd proxy plugins)", why)
	case shim.Spec.MigrateFrom != nil:
		return fmt.Errorf("spec.migrateFrom: %s (runtime-class-manager installs into containerd alone)", why)
	}
	for i, h := range HandlerSpecs(shim) {
		field := "spec"
		if i > 0 {
			field = fmt.Sprintf("spec.handlers[%d]", i-1)
		}
		if err := checkCRIOHandler(h, field, why); err != nil {
			return err
		}
	}
	return nil
}

func checkCRIOHandler(h v1alpha1.HandlerSpec, field, why string) error {
	for name, set := range map[string]bool{
		"runtimeClass.adoptHandler": h.RuntimeClass.AdoptHandler, "snapshotter": h.Snapshotter != "", "sandboxer": h.Sandboxer != "",
		"ioType": h.IOType != "", "podAnnotations": len(h.PodAnnotations) > 0, "containerAnnotations": len(h.ContainerAnnotations) > 0,
	} {
		if set {
			return fmt.Errorf("%s.%s: %s", field, name, why)
		}
	}
	opts, err := options(h.RuntimeOptions)
	if err != nil {
		return fmt.Errorf("%s.runtimeOptions: %w", field, err)
	}
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		if !slices.Contains(crioOptions, k) {
			return fmt.Errorf("%s.runtimeOptions.%s: %s (on CRI-O a handler takes %s)", field, k, why, strings.Join(crioOptions, ", "))
		}
	}
	return nil
}
