package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/frontend/report"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// pauseCommand is pause (paused true) or resume (false): a patch of
// spec.rolloutStrategy.paused, then what the rollout does next.
func pauseCommand(o *options, paused bool) *cobra.Command {
	verb, short := "pause", "Stop the Shim's rollout: no node starts; the installer Jobs running finish"
	if !paused {
		verb, short = "resume", "Go on with the Shim's rollout where it stopped"
	}
	return &cobra.Command{
		Use:     verb + " NAME",
		Short:   short,
		Long:    short + ".\n\nIt sets spec.rolloutStrategy.paused (field manager " + fieldOwner + "), then prints what the rollout does next, as plan does.",
		Example: "  kubectl shimkit " + verb + " spin",
		Args:    exactlyName,
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := o.reader()
			if err != nil {
				return err
			}
			return o.explain(setPaused(cmd.Context(), o, r, args[0], paused))
		},
	}
}

func setPaused(ctx context.Context, o *options, r reader, name string, paused bool) error {
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"rolloutStrategy": map[string]any{"paused": paused}}})
	shim := &v1alpha1.Shim{}
	shim.Name = name
	if err := r.c.Patch(ctx, shim, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(fieldOwner)); err != nil {
		return fmt.Errorf("Shim %s: %w", name, err)
	}
	state := "resumed"
	if paused {
		state = "paused"
	}
	fmt.Fprintf(o.streams.Out, "shim.%s/%s %s\n", v1alpha1.GroupVersion.Group, name, state)
	o.warnNoOperator(ctx, r, "nothing carries the rollout out")
	return printNext(ctx, o, r, shim)
}

// next says what the Shim's rollout does next, from its plan.
func printNext(ctx context.Context, o *options, r reader, shim *v1alpha1.Shim) error {
	rep, err := planReport(ctx, r, shim, shim, false, o.operatorOptions(ctx, r))
	if err != nil {
		return err
	}
	fmt.Fprintln(o.streams.Out, report.Next(rep, time.Now()))
	return nil
}

func rerunCommand(o *options) *cobra.Command {
	var node string
	var force bool
	cmd := &cobra.Command{
		Use:   "rerun NAME --node NODE",
		Short: "Retry one failed node of the Shim now, and only it",
		Long: `rerun clears the failure of one node, and only its, through the Shim's
retry annotation (shim.containerd.x-k8s.io/retry) that the operator
honours: the node starts again now, within maxUpdate, also while another
failed node halts the rollout (which still holds for every other node). A
node that has not failed is refused, and so is a failure that a retry of
the same spec cannot change (Conflict, DigestMismatch, ConfigInvalid, ...)
until you fixed its cause and say so with --force.`,
		Example: "  kubectl shimkit rerun spin --node worker-3",
		Args:    exactlyName,
		PreRunE: func(*cobra.Command, []string) error {
			if node == "" {
				return usagef("--node is required")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := o.reader()
			if err != nil {
				return err
			}
			return o.explain(runRerun(cmd.Context(), o, r, args[0], node, force))
		},
	}
	cmd.Flags().StringVar(&node, "node", "", "the failed node to retry")
	cmd.Flags().BoolVar(&force, "force", false, "retry a failure that a retry alone cannot change, once its cause is fixed")
	return cmd
}

func runRerun(ctx context.Context, o *options, r reader, name, node string, force bool) error {
	rep, err := statusOf(ctx, r, name)
	if err != nil {
		return err
	}
	row, ok := report.Row(rep, node)
	switch {
	case !ok:
		return fmt.Errorf("node %s: the Shim %s neither selects it nor has anything on it", node, name)
	case row.State != report.StateFailed:
		return fmt.Errorf("node %s has not failed (%s): nothing to rerun", node, row.State)
	case plan.Reason(row.Reason).Permanent() && !force:
		return fmt.Errorf("node %s failed %s, which a retry of the same spec cannot change (%s): fix its cause, then rerun with --force", node, row.Reason, row.Message)
	}
	req := node + "@" + strconv.FormatInt(time.Now().UnixNano(), 10)
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{v1alpha1.RetryAnnotation: req}}})
	shim := &v1alpha1.Shim{}
	shim.Name = name
	if err := r.c.Patch(ctx, shim, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(fieldOwner)); err != nil {
		return fmt.Errorf("Shim %s: %w", name, err)
	}
	fmt.Fprintf(o.streams.Out, "shim.%s/%s: node %s retried (%s=%s); it failed %s\n", v1alpha1.GroupVersion.Group, name, node, v1alpha1.RetryAnnotation, req, row.Reason)
	o.warnNoOperator(ctx, r, "nothing retries the node")
	return nil
}
