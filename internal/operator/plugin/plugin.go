package plugin

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/internal/operator/manager"
	"github.com/shimkit/shimkit/internal/operator/nodejob"
	"github.com/shimkit/shimkit/internal/operator/report"
	"github.com/shimkit/shimkit/internal/version"
	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

const usage = `kubectl shimkit: what the shimkit operator sees and would do, writing nothing.

  kubectl shimkit status NAME [-o wide|json|yaml]     a row per node of the Shim
  kubectl shimkit plan NAME [-o json|yaml]            what the operator does with the live spec
  kubectl shimkit plan -f shim.yaml [-o json|yaml]    what applying the file would do
  kubectl shimkit plan --delete NAME [-o json|yaml]   what deleting the Shim would do, and the pods it waits for
  kubectl shimkit --version

Flags (after the command):
`

// Run runs kubectl shimkit with args (without the program's name) and
// returns its exit code: 0, 1 for a failure, 2 for a wrong command line.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		return 2
	}
	if args[0] == "--version" || args[0] == "version" {
		fmt.Fprintln(stdout, version.String("kubectl-shimkit"))
		return 0
	}
	cmd := args[0]
	fs := flag.NewFlagSet("kubectl shimkit "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	kubeconfig := fs.String("kubeconfig", getenv("KUBECONFIG"), "kubeconfig file [KUBECONFIG]")
	namespace := fs.String("namespace", "shimkit-system", "the operator's namespace, where its Jobs run")
	output := fs.String("o", "", "output format: wide (status), json or yaml")
	file := fs.String("f", "", "plan: a file with the Shim to apply (YAML or JSON)")
	del := fs.Bool("delete", false, "plan: what deleting the Shim would do")
	if err := fs.Parse(reorder(args[1:])); err != nil {
		return 2
	}
	name := fs.Arg(0)
	switch {
	case cmd != "status" && cmd != "plan":
		fmt.Fprintf(stderr, "kubectl shimkit: unknown command %q\n\n%s", cmd, usage)
		return 2
	case fs.NArg() > 1, cmd == "status" && name == "", cmd == "plan" && (name == "") == (*file == ""), *del && (cmd != "plan" || name == ""):
		fmt.Fprintf(stderr, "kubectl shimkit %s: want %s\n", cmd, map[string]string{"status": "NAME", "plan": "NAME or -f FILE"}[cmd])
		return 2
	}
	c, err := manager.NewClient(*kubeconfig)
	if err == nil {
		r := reader{c: c, namespace: *namespace}
		switch {
		case cmd == "status":
			err = r.status(ctx, stdout, name, *output)
		case *del:
			err = r.removal(ctx, stdout, name, *output)
		default:
			err = r.plan(ctx, stdout, name, *file, *output)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "kubectl shimkit %s: %v\n", cmd, err)
		return 1
	}
	return 0
}

// reorder puts the flags before the arguments (kubectl's order: NAME may
// come first), which package flag needs.
func reorder(args []string) []string {
	var flags, rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case len(a) > 1 && a[0] == '-':
			flags = append(flags, a)
			if !hasValue(a) && !boolFlag(a) && i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
		default:
			rest = append(rest, a)
		}
	}
	return append(flags, rest...)
}

// boolFlag: the flag takes no value.
func boolFlag(flag string) bool { return strings.TrimLeft(flag, "-") == "delete" }

// hasValue: the flag carries its value (-o=json, --kubeconfig=x).
func hasValue(flag string) bool {
	for _, c := range flag {
		if c == '=' {
			return true
		}
	}
	return false
}

// reader reads what the operator reads, once.
type reader struct {
	c         client.Client
	namespace string
}

// results reads the installers' results of the shim's finished Jobs from
// their pods, as the operator does (one list of the namespace's pods).
func (r reader) results(ctx context.Context, shim string) (func(*batchv1.Job) *plan.NodeResult, error) {
	var pods corev1.PodList
	if err := r.c.List(ctx, &pods, client.InNamespace(r.namespace)); err != nil {
		return nil, fmt.Errorf("list pods in %s: %w", r.namespace, err)
	}
	byJob := map[string][]corev1.Pod{}
	for _, p := range pods.Items {
		if uid := p.Labels[nodejob.LabelControllerUID]; uid != "" {
			byJob[uid] = append(byJob[uid], p)
		}
	}
	return func(j *batchv1.Job) *plan.NodeResult { return nodejob.JobResult(j, byJob[string(j.UID)], shim) }, nil
}

// fleet lists the nodes and the operator's Jobs, and reads the shim's
// results (results).
func (r reader) fleet(ctx context.Context, shim string) ([]*corev1.Node, []*batchv1.Job, func(*batchv1.Job) *plan.NodeResult, error) {
	var nodes corev1.NodeList
	if err := r.c.List(ctx, &nodes); err != nil {
		return nil, nil, nil, fmt.Errorf("list nodes: %w", err)
	}
	var jobs batchv1.JobList
	if err := r.c.List(ctx, &jobs, client.InNamespace(r.namespace), client.MatchingLabels{jobview.LabelManagedBy: jobview.ManagedBy}); err != nil {
		return nil, nil, nil, fmt.Errorf("list Jobs in %s: %w", r.namespace, err)
	}
	ns := make([]*corev1.Node, len(nodes.Items))
	for i := range nodes.Items {
		ns[i] = &nodes.Items[i]
	}
	js := make([]*batchv1.Job, len(jobs.Items))
	for i := range jobs.Items {
		js[i] = &jobs.Items[i]
	}
	results, err := r.results(ctx, shim)
	return ns, js, results, err
}

// liveFleet reads the live Shim, then its fleet (fleet).
func (r reader) liveFleet(ctx context.Context, name string) (*v1alpha1.Shim, []*corev1.Node, []*batchv1.Job, func(*batchv1.Job) *plan.NodeResult, error) {
	shim := &v1alpha1.Shim{}
	if err := r.c.Get(ctx, client.ObjectKey{Name: name}, shim); err != nil {
		return nil, nil, nil, nil, fmt.Errorf("Shim %s: %w", name, err)
	}
	nodes, jobs, results, err := r.fleet(ctx, shim.Name)
	return shim, nodes, jobs, results, err
}

func (r reader) status(ctx context.Context, w io.Writer, name, output string) error {
	shim, nodes, jobs, results, err := r.liveFleet(ctx, name)
	if err != nil {
		return err
	}
	return report.Write(w, shim, report.Status(shim, operator.NodeViews(shim, nodes, jobs, results)), output, time.Now())
}

func (r reader) plan(ctx context.Context, w io.Writer, name, file, output string) error {
	shim, err := r.shimToPlan(ctx, name, file)
	if err != nil {
		return err
	}
	nodes, jobs, results, err := r.fleet(ctx, shim.Name)
	if err != nil {
		return err
	}
	var classes nodev1.RuntimeClassList
	if err := r.c.List(ctx, &classes); err != nil {
		return fmt.Errorf("list RuntimeClasses: %w", err)
	}
	now := time.Now()
	opts := operator.Options{InstallerImage: "-", Namespace: r.namespace}
	p, err := operator.PreviewRollout(shim, nodes, jobs, results, classes.Items, opts, now)
	if err != nil {
		return err
	}
	rep := report.Plan(p)
	if rs := shim.Spec.RolloutStrategy; rs != nil && rs.Disruption != nil && rs.Disruption.Policy == v1alpha1.DisruptDrain {
		wl, err := r.workloads(ctx)
		if err != nil {
			return err
		}
		rep.Drains = operator.PreviewDrains(p, wl, opts)
	}
	return report.WritePlan(w, rep, output, now)
}

// removal writes what deleting the live Shim would do.
func (r reader) removal(ctx context.Context, w io.Writer, name, output string) error {
	shim, nodes, jobs, results, err := r.liveFleet(ctx, name)
	if err != nil {
		return err
	}
	wl, err := r.workloads(ctx)
	if err != nil {
		return err
	}
	p, err := operator.PreviewRemoval(shim, nodes, jobs, results, wl, operator.Options{InstallerImage: "-", Namespace: r.namespace}, time.Now())
	if err != nil {
		return err
	}
	return report.WriteRemoval(w, p, output)
}

// workloads lists the cluster's pods and PodDisruptionBudgets.
func (r reader) workloads(ctx context.Context) (operator.Workloads, error) {
	var pods corev1.PodList
	if err := r.c.List(ctx, &pods); err != nil {
		return operator.Workloads{}, fmt.Errorf("list pods: %w", err)
	}
	var budgets policyv1.PodDisruptionBudgetList
	if err := r.c.List(ctx, &budgets); err != nil {
		return operator.Workloads{}, fmt.Errorf("list PodDisruptionBudgets: %w", err)
	}
	var wl operator.Workloads
	for i := range pods.Items {
		wl.Pods = append(wl.Pods, &pods.Items[i])
	}
	for i := range budgets.Items {
		wl.Budgets = append(wl.Budgets, &budgets.Items[i])
	}
	return wl, nil
}

// shimToPlan is the live Shim, or the file's with the live one's
// identity and status, once the API server admitted it (a dry run).
func (r reader) shimToPlan(ctx context.Context, name, file string) (*v1alpha1.Shim, error) {
	if file == "" {
		shim := &v1alpha1.Shim{}
		if err := r.c.Get(ctx, client.ObjectKey{Name: name}, shim); err != nil {
			return nil, fmt.Errorf("Shim %s: %w", name, err)
		}
		return shim, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	shim := &v1alpha1.Shim{}
	if err := yaml.UnmarshalStrict(data, shim); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	shim.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("Shim"))
	if err := r.c.Patch(ctx, shim.DeepCopy(), client.Apply, client.DryRunAll, client.FieldOwner("kubectl-shimkit"), client.ForceOwnership); err != nil {
		return nil, fmt.Errorf("%s: the API server refuses it: %w", file, err)
	}
	live := &v1alpha1.Shim{}
	switch err := r.c.Get(ctx, client.ObjectKey{Name: shim.Name}, live); {
	case apierrors.IsNotFound(err):
		// A new Shim: its UID orders the nodes within a wave; the
		// waves' sizes and rules hold.
	case err != nil:
		return nil, fmt.Errorf("Shim %s: %w", shim.Name, err)
	default:
		shim.UID, shim.Generation, shim.Status = live.UID, live.Generation+1, live.Status
	}
	return shim, nil
}
