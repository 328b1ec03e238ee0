package plugin

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	nodev1 "k8s.io/api/node/v1"

	"github.com/shimkit/shimkit/internal/frontend/report"
	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// planFlags are plan's own flags.
type planFlags struct {
	file     string
	remove   bool
	exitCode bool
	out      *output
}

func planCommand(o *options) *cobra.Command {
	f := &planFlags{}
	cmd := &cobra.Command{
		Use:   "plan (NAME | -f FILE | --delete NAME)",
		Short: "What the operator would do with a Shim's spec, a file's, or a deletion, writing nothing",
		Long: `plan reads the cluster once and decides as the operator's reconcile does:
what changes in the spec (old → new: for a file, from the live Shim; for
the live Shim, from the revision its nodes last had whole), what the Shim
will say of itself (a refused spec, a RuntimeClass it cannot own), then
wave by wave which nodes are installed, upgraded and uninstalled, when
(a step's bake, a window), what stops the rollout, the nodes skipped and
why, the RuntimeClasses, and a summary line. -f checks the file with the
API server first (a server-side dry run) and plans applying it ("-" reads
standard input). --delete plans the Shim's deletion: the uninstall order,
the pods each node waits for, and the RuntimeClasses last.

--exit-code exits 1 when applying would change something (a field, a
node, a RuntimeClass) and 0 when nothing changes, as kubectl diff; errors
exit above 1.`,
		Example: `  kubectl shimkit plan -f spin.yaml
  kubectl shimkit plan spin -o wide
  kubectl shimkit plan --delete spin
  kubectl shimkit plan -f spin.yaml --exit-code >/dev/null || echo "spin.yaml changes the cluster"`,
		Args: func(_ *cobra.Command, args []string) error {
			switch {
			case len(args) > 1:
				return usagef("want one NAME, got %d arguments", len(args))
			case f.remove && (len(args) == 0 || f.file != ""):
				return usagef("--delete wants the Shim's NAME, without -f")
			case (len(args) == 0) == (f.file == ""):
				return usagef("want the Shim's NAME or -f FILE")
			}
			return nil
		},
		PreRunE: func(*cobra.Command, []string) error { return f.out.check() },
		RunE: func(cmd *cobra.Command, args []string) error {
			name := ""
			if len(args) > 0 {
				name = args[0]
			}
			r, err := o.reader()
			if err != nil {
				return err
			}
			changes, err := runPlan(cmd.Context(), o, r, f, name)
			if err != nil {
				return o.explain(err)
			}
			if f.exitCode && changes {
				o.exit = ExitChanges
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&f.file, "filename", "f", "", `a file with the Shim to apply (YAML or JSON; "-": standard input)`)
	cmd.Flags().BoolVar(&f.remove, "delete", false, "plan the deletion of the Shim NAME")
	cmd.Flags().BoolVar(&f.exitCode, "exit-code", false, "exit 1 when applying would change something, 0 when nothing changes")
	f.out = addOutput(cmd, formatWide)
	return cmd
}

// plan writes the plan and says whether it changes anything.
func runPlan(ctx context.Context, o *options, r reader, f *planFlags, name string) (bool, error) {
	if f.remove {
		return runRemoval(ctx, o, r, f.out, name)
	}
	shim, live, err := r.shimToPlan(ctx, name, f.file, o.streams.In)
	if err != nil {
		return false, err
	}
	o.warnNoOperator(ctx, r, "nothing carries this plan out")
	rep, err := planReport(ctx, r, shim, live, f.file != "")
	if err != nil {
		return false, err
	}
	w := o.streams.Out
	return rep.HasChanges(), f.out.write(w, report.KindPlan, rep, func(format string) error {
		return report.WritePlan(w, rep, format == formatWide, time.Now())
	})
}

// planReport decides the rollout of shim as the operator would, with
// what changes from before.
func planReport(ctx context.Context, r reader, shim, live *v1alpha1.Shim, fromFile bool) (report.PlanReport, error) {
	nodes, jobs, results, err := r.fleet(ctx, shim.Name)
	if err != nil {
		return report.PlanReport{}, err
	}
	var classes nodev1.RuntimeClassList
	if err := r.c.List(ctx, &classes); err != nil {
		return report.PlanReport{}, err
	}
	opts := operator.Options{InstallerImage: "-", Namespace: r.namespace}
	p, err := operator.PreviewRollout(shim, nodes, jobs, results, classes.Items, opts, time.Now())
	if err != nil {
		return report.PlanReport{}, err
	}
	rep := report.Plan(p)
	if rs := shim.Spec.RolloutStrategy; rs != nil && rs.Disruption != nil && rs.Disruption.Policy == v1alpha1.DisruptDrain {
		wl, err := r.workloads(ctx)
		if err != nil {
			return report.PlanReport{}, err
		}
		rep.Drains = operator.PreviewDrains(p, wl, opts)
	}
	old, err := r.before(ctx, live, fromFile)
	if err != nil {
		return report.PlanReport{}, err
	}
	now := report.Version{Spec: &shim.Spec}
	if p.Pinned {
		now.Artifact = shim.Status.Artifact
	}
	rep.Changes, err = report.SpecChanges(old, now)
	return rep, err
}

// removal writes what deleting the live Shim would do, and says whether
// it changes anything (it does while the Shim exists).
func runRemoval(ctx context.Context, o *options, r reader, out *output, name string) (bool, error) {
	shim, nodes, jobs, results, err := r.liveFleet(ctx, name)
	if err != nil {
		return false, err
	}
	wl, err := r.workloads(ctx)
	if err != nil {
		return false, err
	}
	p, err := operator.PreviewRemoval(shim, nodes, jobs, results, wl, operator.Options{InstallerImage: "-", Namespace: r.namespace}, time.Now())
	if err != nil {
		return false, err
	}
	w := o.streams.Out
	return true, out.write(w, report.KindRemoval, p, func(format string) error {
		return report.WriteRemoval(w, p, format == formatWide)
	})
}
