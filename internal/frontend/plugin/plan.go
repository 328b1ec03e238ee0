package plugin

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/frontend/report"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
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
		Use:   "plan (NAME | -f FILE|DIR | --delete NAME)",
		Short: "What the operator would do with a Shim's spec, a file's, or a deletion, writing nothing",
		Long: `plan reads the cluster once and decides as the operator's reconcile does:
what changes in the spec (old → new: for a file, from the live Shim; for
the live Shim, from the revision its nodes last had whole), what the Shim
will say of itself (a refused spec, a RuntimeClass it cannot own), then
wave by wave which nodes are installed, upgraded and uninstalled, when
(a step's bake, a window), what stops the rollout, the nodes skipped and
why, the RuntimeClasses, and a summary line. -f checks each Shim of the
file with the API server first (a server-side dry run) and plans applying
it: every document of the file ("-" reads standard input), or of every
.yaml, .yml and .json file of a directory, as kubectl apply -f reads them;
a document of another kind is refused, naming it. -o json and yaml print
one ShimPlan, or a List of them. --delete plans the Shim's deletion: the uninstall order,
the pods each node waits for, and the RuntimeClasses last.

--exit-code exits 1 when applying would change something (a field, a
node, a RuntimeClass) and 0 when nothing changes, as kubectl diff; errors
exit above 1. --detailed-exitcode gives terraform plan's codes instead: 0
nothing changes, 1 an error (a wrong command line included), 2 changes.`,
		Example: `  kubectl shimkit plan -f spin.yaml
  kubectl shimkit plan -f shims/
  kubectl shimkit plan spin -o wide
  kubectl shimkit plan --delete spin
  kubectl shimkit plan -f spin.yaml --exit-code >/dev/null || echo "spin.yaml changes the cluster"
  kubectl shimkit plan -f spin.yaml --detailed-exitcode; [ $? = 2 ] && echo "spin.yaml changes the cluster"`,
		Args: func(_ *cobra.Command, args []string) error {
			switch {
			case len(args) > 1:
				return usagef("want one NAME, got %d arguments", len(args))
			case f.remove && (len(args) == 0 || f.file != ""):
				return usagef("--delete wants the Shim's NAME, without -f")
			case (len(args) == 0) == (f.file == ""):
				return usagef("want the Shim's NAME or -f FILE")
			case f.exitCode && o.detailed:
				return usagef("--exit-code and %s ask for different codes: choose one", detailedFlag)
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
			switch {
			case f.exitCode && changes:
				o.exit = ExitChanges
			case o.detailed && changes:
				o.exit = ExitDetailedChanges
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&f.file, "filename", "f", "", `the Shims to apply: a file of YAML or JSON documents ("-": standard input), or a directory of .yaml, .yml and .json files`)
	cmd.Flags().BoolVar(&f.remove, "delete", false, "plan the deletion of the Shim NAME")
	cmd.Flags().BoolVar(&f.exitCode, "exit-code", false, "exit 1 when applying would change something, 0 when nothing changes")
	cmd.Flags().BoolVar(&o.detailed, detailedFlag[2:], false, "terraform plan's exit codes: 0 nothing changes, 1 an error, 2 changes")
	f.out = addOutput(cmd, formatWide)
	return cmd
}

// plan writes the plan of each Shim (the live one, or every document of
// -f) and says whether any changes something.
func runPlan(ctx context.Context, o *options, r reader, f *planFlags, name string) (bool, error) {
	if f.remove {
		return runRemoval(ctx, o, r, f.out, name)
	}
	type planned struct{ shim, live *v1alpha1.Shim }
	var todo []planned
	if f.file == "" {
		shim, live, err := r.liveShim(ctx, name)
		if err != nil {
			return false, err
		}
		todo = append(todo, planned{shim, live})
	} else {
		shims, err := readShims(f.file, o.streams.In)
		if err != nil {
			return false, err
		}
		for _, fs := range shims {
			shim, live, err := r.admitted(ctx, fs.shim, fs.source)
			if err != nil {
				return false, err
			}
			todo = append(todo, planned{shim, live})
		}
	}
	o.warnNoOperator(ctx, r, "nothing carries this plan out")
	opts := o.operatorOptions(ctx, r)
	reps := make([]report.PlanReport, 0, len(todo))
	changes := false
	for _, p := range todo {
		rep, err := planReport(ctx, r, p.shim, p.live, f.file != "", opts)
		if err != nil {
			return false, err
		}
		changes = changes || rep.HasChanges()
		reps = append(reps, rep)
	}
	return changes, writePlans(o.streams.Out, f.out, reps)
}

// writePlans writes the plans: as text one after the other, for machines
// one document, or a List of them.
func writePlans(w io.Writer, out *output, reps []report.PlanReport) error {
	if len(reps) == 1 || out.printer == nil {
		for i, rep := range reps {
			if i > 0 {
				fmt.Fprintln(w)
			}
			err := out.write(w, report.KindPlan, rep, func(format string) error {
				return report.WritePlan(w, rep, format == formatWide, time.Now())
			})
			if err != nil {
				return err
			}
		}
		return nil
	}
	return out.writeList(w, report.KindPlan, reps)
}

// planReport decides the rollout of shim as the operator would, with
// what changes from before.
func planReport(ctx context.Context, r reader, shim, live *v1alpha1.Shim, fromFile bool, opts operator.Options) (report.PlanReport, error) {
	nodes, jobs, results, err := r.fleet(ctx, shim.Name)
	if err != nil {
		return report.PlanReport{}, err
	}
	var classes nodev1.RuntimeClassList
	if err := r.c.List(ctx, &classes); err != nil {
		return report.PlanReport{}, err
	}
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
	p, err := operator.PreviewRemoval(shim, nodes, jobs, results, wl, o.operatorOptions(ctx, r), time.Now())
	if err != nil {
		return false, err
	}
	w := o.streams.Out
	return true, out.write(w, report.KindRemoval, p, func(format string) error {
		return report.WriteRemoval(w, p, format == formatWide)
	})
}

// operatorOptions are the options the operator in the namespace plans
// with, as it published them (shimspec.OptionsConfigMap), so that a plan
// is the operator's. None published (no operator ran there, or an older
// one), or none readable: the defaults, with a warning saying so.
func (o *options) operatorOptions(ctx context.Context, r reader) operator.Options {
	defaults := operator.Options{InstallerImage: "-", Namespace: r.namespace}
	cm := &corev1.ConfigMap{}
	err := r.c.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: shimspec.OptionsConfigMap}, cm)
	var p shimspec.Published
	if err == nil {
		p, err = shimspec.ParsePublished(cm.Data[shimspec.OptionsKey])
	}
	if err != nil {
		fmt.Fprintf(o.streams.ErrOut, "warning: the operator's options in namespace %s are not read (%v): planned with the defaults\n", r.namespace, err)
		return defaults
	}
	return operator.Options{InstallerImage: p.InstallerImage, Namespace: p.Namespace, Preset: p.Preset, ConfigMode: p.ConfigMode,
		RestartTimeout: p.RestartTimeout, ServerVersion: p.ServerVersion, BatchWindow: p.BatchWindow, VerifyPeriod: p.VerifyPeriod,
		MaxRestartingNodes: p.MaxRestartingNodes}
}
