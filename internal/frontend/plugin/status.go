package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/shimkit/shimkit/internal/frontend/report"
	"github.com/shimkit/shimkit/internal/operator/decide"
)

// watchEvery is how often status --watch reads the cluster again.
const watchEvery = 2 * time.Second

func statusCommand(o *options) *cobra.Command {
	var watch bool
	var out *output
	cmd := &cobra.Command{
		Use:   "status NAME",
		Short: "A row per node of the Shim: its runtime, state, installed revision, since when, and why",
		Long: `status shows a row per node the Shim selects or has something on: its
container runtime, its state as the rollout counts it (Current, Outdated,
Installing, Uninstalling, Failed, Pending, ToRemove, Skipped), the
revision installed, since when, and why it failed or is skipped. The
first line counts the rows by state. -o wide adds the pinned digest, the
revision a failed node tried, and the message; -o name prints node/NAME
per row; --watch prints the table again each time it changes.`,
		Example: `  kubectl shimkit status spin
  kubectl shimkit status spin -o wide --watch
  kubectl shimkit status spin -o jsonpath='{.nodes[?(@.state=="Failed")].node}'`,
		Args:    exactlyName,
		PreRunE: func(*cobra.Command, []string) error { return out.check() },
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := o.reader()
			if err != nil {
				return err
			}
			if !watch {
				return o.explain(runStatus(cmd.Context(), o, r, out, args[0], o.streams.Out))
			}
			return o.explain(watchStatus(cmd.Context(), o, r, out, args[0]))
		},
	}
	out = addOutput(cmd, formatWide, formatName)
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "after the status, print it again each time it changes (until interrupted)")
	return cmd
}

// status writes the Shim's status once.
func runStatus(ctx context.Context, o *options, r reader, out *output, name string, w io.Writer) error {
	rep, err := statusOf(ctx, r, name)
	if err != nil {
		return err
	}
	o.warnNoOperator(ctx, r, "nothing acts on the Shim, and its status is as an operator last wrote it")
	return writeStatus(w, out, rep)
}

func statusOf(ctx context.Context, r reader, name string) (report.StatusReport, error) {
	shim, nodes, jobs, results, err := r.liveFleet(ctx, name)
	if err != nil {
		return report.StatusReport{}, err
	}
	return report.StatusOf(shim, report.Status(shim, decide.NodeViewsOf(shim, nodes, jobs, results))), nil
}

func writeStatus(w io.Writer, out *output, rep report.StatusReport) error {
	return out.write(w, report.KindStatus, rep, func(format string) error {
		if format == formatName {
			return report.WriteNames(w, rep)
		}
		return report.WriteStatus(w, rep, format == formatWide, time.Now())
	})
}

// watchStatus writes the status, then again each time it changes (a
// row, a count, the condition; not the ages), until ctx ends.
func watchStatus(ctx context.Context, o *options, r reader, out *output, name string) error {
	var last []byte
	tick := time.NewTicker(watchEvery)
	defer tick.Stop()
	for {
		rep, err := statusOf(ctx, r, name)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if cur, _ := json.Marshal(rep); !bytes.Equal(cur, last) {
			if last != nil && out.printer == nil {
				fmt.Fprintln(o.streams.Out)
			}
			if err := writeStatus(o.streams.Out, out, rep); err != nil {
				return err
			}
			last = cur
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
