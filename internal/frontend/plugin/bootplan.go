package plugin

import (
	"context"
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// bootPlanFlags are boot-plan's own flags: the pool's nodes as they join.
type bootPlanFlags struct {
	labels  string
	arch    string
	runtime string
}

func bootPlanCommand(o *options) *cobra.Command {
	f := &bootPlanFlags{}
	cmd := &cobra.Command{
		Use:   "boot-plan [NAME...] --labels KEY=VALUE,...",
		Short: "The node plan a pool's node image installs at boot, as the operator would give its nodes",
		Long: `boot-plan prints the node plan (a NodePlanList, JSON) that a node image of a
pool installs before its runtime's first start (shimkit-installer
boot-units): the install plans of the named Shims, or of every Shim whose
nodeSelector selects the pool's labels, as the operator builds them for a
node with --labels, --arch and --runtime, with the options it publishes.
The plans name no node, run no canary (there is no API before the kubelet)
and pin the artifacts the cluster installs.

A Shim the pool cannot install at boot is refused, naming it and why: one
being deleted, whose nodes' image provides it, whose artifact is an image
or needs a pull secret, that does not select the labels, or whose
artifact the operator has not pinned yet. Build the image again when a
Shim changes: a node that boots an older plan is upgraded by the operator.`,
		Example: `  kubectl shimkit boot-plan --labels pool=wasm --arch arm64 > plan.json
  kubectl shimkit boot-plan spin gvisor --labels pool=sandboxed,shim.containerd.x-k8s.io/spin=installed`,
		PreRunE: func(*cobra.Command, []string) error { return f.check() },
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := o.reader()
			if err != nil {
				return err
			}
			return o.explain(runBootPlan(cmd.Context(), o, r, f, args))
		},
	}
	cmd.Flags().StringVar(&f.labels, "labels", "", "the labels the pool's nodes join with (KEY=VALUE,...), as the node pool declares them")
	cmd.Flags().StringVar(&f.arch, "arch", "amd64", "the pool's nodes' architecture (kubernetes.io/arch), unless --labels names it")
	cmd.Flags().StringVar(&f.runtime, "runtime", "", "the pool's container runtime: containerd or cri-o (empty: the installer detects it at boot)")
	return cmd
}

// check refuses flags that name no node.
func (f *bootPlanFlags) check() error {
	if _, err := labels.ConvertSelectorToLabelsMap(f.labels); err != nil {
		return usagef("--labels %q: %v", f.labels, err)
	}
	if f.runtime != "" && f.runtime != v1alpha1.RuntimeContainerd && f.runtime != v1alpha1.RuntimeCRIO {
		return usagef("--runtime %q: want %s or %s", f.runtime, v1alpha1.RuntimeContainerd, v1alpha1.RuntimeCRIO)
	}
	return nil
}

// template is a node of the pool as it joins.
func (f *bootPlanFlags) template() *corev1.Node {
	set, _ := labels.ConvertSelectorToLabelsMap(f.labels) // check said it parses
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{corev1.LabelOSStable: "linux", corev1.LabelArchStable: f.arch}}}
	for k, v := range set {
		n.Labels[k] = v
	}
	if f.runtime != "" {
		n.Status.NodeInfo.ContainerRuntimeVersion = f.runtime + "://"
	}
	return n
}

func runBootPlan(ctx context.Context, o *options, r reader, f *bootPlanFlags, names []string) error {
	var list v1alpha1.ShimList
	if err := r.c.List(ctx, &list); err != nil {
		return fmt.Errorf("list Shims: %w", err)
	}
	node := f.template()
	shims, err := poolShims(list.Items, names, node)
	if err != nil {
		return err
	}
	l, err := operator.BootPlan(shims, node, o.operatorOptions(ctx, r))
	if err != nil {
		return err
	}
	data, err := plan.EncodeList(l)
	if err != nil {
		return err
	}
	_, err = o.streams.Out.Write(data)
	return err
}

// poolShims are the Shims named, or those that select the node (but the
// ones its image provides, and those being deleted).
func poolShims(all []v1alpha1.Shim, names []string, node *corev1.Node) ([]*v1alpha1.Shim, error) {
	var out []*v1alpha1.Shim
	for i := range all {
		s := &all[i]
		switch {
		case len(names) > 0 && slices.Contains(names, s.Name):
			out = append(out, s)
		case len(names) == 0 && nodeview.Matches(s, node) && s.DeletionTimestamp.IsZero() && s.Spec.FetchStrategy.Type != v1alpha1.FetchPreinstalled:
			out = append(out, s)
		}
	}
	for _, n := range names {
		if !slices.ContainsFunc(out, func(s *v1alpha1.Shim) bool { return s.Name == n }) {
			return nil, fmt.Errorf("Shim %s not found", n)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no Shim selects a node with the labels %s", labels.Set(node.Labels))
	}
	return out, nil
}
