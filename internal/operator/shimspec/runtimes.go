package shimspec

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

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

// checkCRIO refuses a Shim that lists cri-o in spec.containerRuntimes
// and sets what CRI-O has no setting for (v1alpha1's CRIOUnsupported),
// naming the field. (A Shim that does not list it runs on CRI-O only when
// it sets nothing of the kind: ShimSpec.Runtimes.)
func checkCRIO(shim *v1alpha1.Shim) error {
	if !slices.Contains(shim.Spec.ContainerRuntimes, v1alpha1.RuntimeCRIO) {
		return nil
	}
	if err := shim.Spec.CRIOUnsupported(); err != nil {
		return fmt.Errorf("%w (spec.containerRuntimes lists cri-o)", err)
	}
	return nil
}
