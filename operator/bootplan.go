package operator

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// ErrNoBootPlan: a Shim cannot be installed at boot on the pool's nodes
// (BootPlan says why, naming the Shim).
var ErrNoBootPlan = errors.New("no boot plan")

// BootPlan returns the node plan a node image installs at boot
// (shimkit-installer boot-units): the install plans of the Shims, in
// name order, for a node like template (its labels, its architecture from
// the kubernetes.io/arch label, its runtime from
// status.nodeInfo.containerRuntimeVersion if set), as the operator builds
// them for such a node with opts, less what a boot cannot do: the plans
// name no node (the image is for every node of the pool), run no canary
// (there is no API before the kubelet) and migrate nothing (a new node has
// no other installer's handler). The operator, finding such a node
// installed at the Shim's current revision, records it without a change.
//
// It refuses (ErrNoBootPlan) a Shim without a UID or being deleted, one the nodes' image
// provides (fetchStrategy preinstalled) or whose artifact the operator's
// Job mounts or reads with a pull secret, one that does not select the
// template or cannot run there, and one whose artifact the operator has
// not pinned yet: a boot plan installs what the cluster installs.
func BootPlan(shims []*v1alpha1.Shim, template *corev1.Node, opts Options) (*plan.NodePlanList, error) {
	if len(shims) == 0 {
		return nil, fmt.Errorf("%w: no Shim", ErrNoBootPlan)
	}
	if template.Name == "" {
		template = template.DeepCopy()
		template.Name = "(pool)" // for the errors of BuildPlan
	}
	shims = slices.SortedFunc(slices.Values(shims), func(a, b *v1alpha1.Shim) int { return cmp.Compare(a.Name, b.Name) })
	plans := make([]*plan.NodePlan, 0, len(shims))
	for _, s := range shims {
		if err := bootable(s, template); err != nil {
			return nil, fmt.Errorf("%w: Shim %s: %s", ErrNoBootPlan, s.Name, err)
		}
		p, err := BuildPlan(s, template, plan.OpInstall, opts)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNoBootPlan, err)
		}
		if p.Artifact != nil && p.Artifact.PullSecretPath != "" {
			return nil, fmt.Errorf("%w: Shim %s: its artifact is read with a pull secret (spec.fetchStrategy.oci.pullSecretRef), which a node has only in the operator's installer Job", ErrNoBootPlan, s.Name)
		}
		p.Node, p.Canary, p.Migrate = "", nil, nil
		plans = append(plans, p)
	}
	l := plan.NewList(plans...)
	if err := l.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoBootPlan, err)
	}
	return l, nil
}

// bootable says why the Shim cannot be installed at boot on nodes like
// template (nil: it can).
func bootable(s *v1alpha1.Shim, template *corev1.Node) error {
	fs := s.Spec.FetchStrategy
	switch {
	case s.UID == "":
		return errors.New("it has no UID (the installed bundle is recorded as the Shim's: plan a Shim read from the cluster)")
	case !s.DeletionTimestamp.IsZero():
		return errors.New("it is being deleted")
	case fs.Type == v1alpha1.FetchPreinstalled:
		return errors.New("its nodes' image provides it (spec.fetchStrategy.type: preinstalled)")
	case fs.Type == v1alpha1.FetchImage:
		return errors.New("its artifact is an image the operator's installer Job mounts (spec.fetchStrategy.type: image); a boot install needs an artifact the node fetches (oci, anonHttp)")
	case !nodeview.Matches(s, template):
		return fmt.Errorf("its spec.nodeSelector %s does not select the pool's labels", labels.Set(s.Spec.NodeSelector))
	}
	if skip := nodeview.Eligibility(s, template, false); skip != nil {
		return fmt.Errorf("the pool's nodes cannot run it: %s (%s)", skip.Reason, skip.Detail)
	}
	if !shimspec.PinnedBySpec(fs) && shimspec.PinOf(s, nodeview.SpecHash(s)) == nil {
		return errors.New("the operator has not pinned its artifact's digest yet (status.artifact): plan again once it has")
	}
	return nil
}
