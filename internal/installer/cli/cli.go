// Package cli is the shimkit-installer command: it carries out a node plan
// (installer/plan) on the node it runs on and reports a typed result.
//
//	shimkit-installer install   --plan FILE [--result FILE] [flags]
//	shimkit-installer uninstall --plan FILE | --shim NAME [--result FILE] [flags]
//	shimkit-installer verify    --plan FILE [--result FILE] [flags]
//	shimkit-installer status    [flags]
//	shimkit-installer canary
//	shimkit-installer copy-self  FILE
//	shimkit-installer copy-image DIR
//	shimkit-installer boot-units --root DIR [--plan FILE] [flags]
//
// verify carries out a verify plan (the install plan of the Shim's current
// spec, operation verify): it compares the node with what the Shim's last
// install recorded, changing nothing, and writes the NodeResult with each
// mismatch in its drift. It exits 0 whenever it could compare, drift or
// not; non-zero only when it could not (a plan it refuses, a state or
// config it cannot read). Installing the same spec repairs the drift.
//
// canary is what the operator's default canary pod runs, under the Shim's
// runtime: it says which kernel it sees (gVisor's own, a VM's) and exits 0.
//
// boot-units writes into a node image the systemd unit that installs a
// plan at boot, before the runtime's first start, so that nothing is
// restarted (boot.go).
//
// copy-self and copy-image copy a Shim's image into the installer's pod
// where the node cannot mount it as an image volume (copyimage.go).
//
// The operator's per-node Job mounts the plan as a file and passes
// --result /dev/termination-log, so the result reaches the Shim's status
// through the pod's termination message. A NodePlanList (several Shims'
// install plans for the node) is carried out in one operation, with one
// containerd restart, and answered with a NodeResultList. An image builder or an admin runs
// the same plan from a file.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/version"
)

// Exit codes: what a Job's status (and a script) can tell apart. They are
// part of the contract with the operator (package plan), which ends a Job
// at once on plan.FinalExitCodes.
const (
	ExitOK             = plan.ExitOK
	ExitFailed         = plan.ExitFailed
	ExitUsage          = plan.ExitUsage
	ExitRolledBack     = plan.ExitRolledBack
	ExitRollbackFailed = plan.ExitRollbackFailed
	ExitRefused        = plan.ExitRefused
	ExitInUse          = plan.ExitInUse
)

const usage = `usage: shimkit-installer install|uninstall|verify|status [flags] | boot-units --root DIR | canary | --version

Carries out a node plan (apiVersion ` + plan.APIVersion + `, kind NodePlan) on this
node: fetches and verifies the artifact, lays out the Shim's bundle, starts its
sandboxer units, registers its runtime handlers, restarts containerd through
systemd and checks it over CRI; rolls everything back if containerd does not
come back. verify changes nothing: it compares the node with what the Shim's
last install recorded and lists each mismatch (exit 0 with or without drift;
installing the same plan repairs it). --result writes the typed NodeResult
(outcome, reason, message, digest, files, drift) to a file, such as
/dev/termination-log.
`

// CanaryFactory returns the runner of a plan's canary on the named node.
// shimkit-installer passes one that has kubelet run the canary as a Pod
// (package canarypod); this package links no Kubernetes client.
type CanaryFactory func(node string) (installer.CanaryRunner, error)

// Run runs the command and returns its exit code. A plan with a canary
// fails (CanaryFailed) unless --offline: use RunWith.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return RunWith(ctx, args, stdout, stderr, nil)
}

// RunWith is Run with the runner of plans' canaries.
func RunWith(ctx context.Context, args []string, stdout, stderr io.Writer, canaries CanaryFactory) int {
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-version" || args[0] == "version") {
		fmt.Fprintln(stdout, version.String("shimkit-installer"))
		return ExitOK
	}
	if len(args) == 0 || len(args[0]) > 0 && args[0][0] == '-' {
		fmt.Fprint(stderr, usage)
		return ExitUsage
	}
	cmd := args[0]
	switch cmd {
	case "canary":
		return canary(stdout)
	case "copy-self", "copy-image":
		return copyCommand(cmd, args[1:], stderr)
	case "boot-units":
		return bootUnits(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("shimkit-installer "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	f := newFlags(fs)
	if err := fs.Parse(args[1:]); err != nil {
		return ExitUsage
	}
	inst, err := f.installer(stdout)
	if err != nil {
		fmt.Fprintln(stderr, "shimkit-installer:", err)
		return ExitUsage
	}
	switch cmd {
	case "install", "uninstall", "verify":
		return f.runPlan(ctx, inst, plan.Operation(cmd), canaries, stdout, stderr)
	case "status":
		st, err := inst.Status(ctx)
		if err != nil {
			fmt.Fprintln(stderr, "shimkit-installer:", err)
			return ExitFailed
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(st)
		return ExitOK
	}
	fmt.Fprintf(stderr, "shimkit-installer: unknown command %q\n%s", cmd, usage)
	return ExitUsage
}

// runPlan reads the plan, carries it out and reports. A NodePlanList of
// several Shims is installed in one operation (InstallAll) and answered
// with a NodeResultList. A verify plan is compared (Verify).
func (f *flags) runPlan(ctx context.Context, inst *installer.Installer, op plan.Operation, canaries CanaryFactory, stdout, stderr io.Writer) int {
	plans, err := f.readPlans(op)
	if err != nil {
		fmt.Fprintln(stderr, "shimkit-installer:", err)
		results := make([]*plan.NodeResult, len(plans))
		for k, p := range plans {
			results[k] = installer.Report(p, nil, err)
		}
		f.writeResults(stderr, results)
		return ExitUsage
	}
	var res []*installer.Result
	switch op {
	case plan.OpInstall:
		f.setCanary(inst, plans, canaries)
		res, err = inst.InstallAll(ctx, plans)
	case plan.OpVerify:
		var r *installer.Result
		r, err = inst.Verify(ctx, plans[0])
		res = []*installer.Result{r}
	default:
		var r *installer.Result
		r, err = inst.Uninstall(ctx, plans[0])
		res = []*installer.Result{r}
	}
	f.writeResults(stderr, installer.ReportAll(plans, res, err))
	return report(stdout, stderr, string(op), res, err)
}

// setCanary gives the installer the runner of the plans' canaries, on
// their node.
func (f *flags) setCanary(inst *installer.Installer, plans []*plan.NodePlan, canaries CanaryFactory) {
	if canaries == nil || !slices.ContainsFunc(plans, func(p *plan.NodePlan) bool { return p.Canary != nil }) {
		return
	}
	r, err := canaries(plans[0].Node)
	if err != nil {
		// Not a usage error: the install runs, and its canary fails
		// with this reason, rolling it back.
		r = installer.CanaryFunc(func(context.Context, plan.Canary) error {
			return fmt.Errorf("%w: no API access to run the canary pod: %w", installer.ErrCanaryFailed, err)
		})
	}
	inst.Canary = r
}

// readPlans reads --plan (a NodePlan, or a NodePlanList of install
// plans), or for uninstall builds the plan from --shim. With an error it
// returns the plan to report the error for.
func (f *flags) readPlans(op plan.Operation) ([]*plan.NodePlan, error) {
	fallback := []*plan.NodePlan{plan.New(plan.ShimRef{Name: f.shim}, op)}
	if f.planFile == "" {
		if op == plan.OpUninstall && f.shim != "" {
			return fallback, fallback[0].Validate()
		}
		return fallback, fmt.Errorf("%w: --plan is required (or --shim for uninstall)", plan.ErrInvalid)
	}
	data, err := os.ReadFile(f.planFile)
	if err != nil {
		return fallback, fmt.Errorf("%w: --plan: %w", plan.ErrInvalid, err)
	}
	plans, err := plan.DecodePlans(data)
	if err != nil {
		return fallback, fmt.Errorf("plan %s: %w", f.planFile, err)
	}
	for _, p := range plans {
		if p.Operation != op {
			return plans, fmt.Errorf("%w: plan %s is for %s, not %s", plan.ErrInvalid, f.planFile, p.Operation, op)
		}
	}
	return plans, nil
}

// writeResults writes the results where --result says: a NodeResult for
// one plan, a NodeResultList for several. A result that cannot be written
// is reported but does not change the exit code.
func (f *flags) writeResults(stderr io.Writer, rs []*plan.NodeResult) {
	if f.resultFile == "" {
		return
	}
	var data []byte
	var err error
	if len(rs) == 1 {
		data, err = plan.EncodeResult(rs[0], plan.MaxTerminationMessage)
	} else {
		data, err = plan.EncodeResults(rs, plan.MaxTerminationMessage)
	}
	if err == nil {
		err = os.WriteFile(f.resultFile, data, 0o644)
	}
	if err != nil {
		fmt.Fprintln(stderr, "shimkit-installer: writing the result:", err)
	}
}

func report(stdout, stderr io.Writer, op string, res []*installer.Result, err error) int {
	switch {
	case errors.Is(err, installer.ErrRollbackFailed):
		fmt.Fprintf(stderr, "shimkit-installer: %s: %v\n", installer.ReasonOf(err), err) // err names the operation
		return ExitRollbackFailed
	case errors.Is(err, installer.ErrRolledBack):
		fmt.Fprintf(stderr, "shimkit-installer: %s: %v\n", installer.ReasonOf(err), err) // err names the operation
		return ExitRolledBack
	case errors.Is(err, plan.ErrInvalid), errors.Is(err, plan.ErrVersion):
		fmt.Fprintf(stderr, "shimkit-installer: %s refused, node unchanged: %v\n", op, err)
		return ExitUsage
	case errors.Is(err, installer.ErrHandlerInUse):
		fmt.Fprintf(stderr, "shimkit-installer: %s refused, node unchanged: %v\n", op, err)
		return ExitInUse
	case err != nil && installer.ReasonOf(err).Permanent():
		fmt.Fprintf(stderr, "shimkit-installer: %s failed, node unchanged (%s: retrying cannot change this): %v\n", op, installer.ReasonOf(err), err)
		return ExitRefused
	case err != nil:
		fmt.Fprintf(stderr, "shimkit-installer: %s failed, node unchanged: %v\n", op, err)
		return ExitFailed
	}
	for _, r := range res {
		fmt.Fprintf(stdout, "%s %s: %s (%s)\n", op, r.Shim, summary(op, r), r.Duration.Round(time.Millisecond))
		for _, d := range r.Drift {
			if op == string(plan.OpVerify) {
				fmt.Fprintf(stdout, "  - %s\n", d)
			} else {
				fmt.Fprintf(stdout, "  repaired: %s\n", d)
			}
		}
	}
	return ExitOK
}

// summary says in a few words what an operation that succeeded did or
// found.
func summary(op string, r *installer.Result) string {
	switch {
	case op == string(plan.OpVerify) && len(r.Drift) == 0:
		return "as recorded"
	case op == string(plan.OpVerify):
		return fmt.Sprintf("%d not as recorded", len(r.Drift))
	case r.Restarted:
		return "done; " + restarted(r) + " restarted in " + r.RestartDuration.Round(time.Millisecond).String()
	case r.Changed:
		return "done; no restart needed"
	case r.Upgrade:
		return "bundle upgraded; config unchanged, no restart needed"
	case len(r.Drift) > 0:
		return "repaired; config unchanged, no restart needed"
	}
	return "nothing to do"
}

// restarted names what was restarted: the runtime, and its unit when
// the result tells it ("CRI-O (crio.service)", "containerd
// (k3s.service)").
func restarted(r *installer.Result) string {
	name := "the container runtime"
	switch r.Runtime {
	case plan.RuntimeContainerd:
		name = "containerd"
	case plan.RuntimeCRIO:
		name = "CRI-O"
	}
	if r.RestartedUnit != "" {
		name += " (" + r.RestartedUnit + ")"
	}
	return name
}

// flags holds the parsed command line.
type flags struct {
	hostRoot, bundleRoot, linkDir, stateDir, unitDir string
	planFile, resultFile, shim, logFormat            string
	offline                                          bool
}

func newFlags(fs *flag.FlagSet) *flags {
	f := &flags{}
	fs.StringVar(&f.hostRoot, "host-root", "/", "where the node's / is mounted")
	fs.StringVar(&f.bundleRoot, "bundle-root", installer.DefaultBundleRoot, "node directory for the Shims' bundles")
	fs.StringVar(&f.linkDir, "link-dir", installer.DefaultLinkDir, `node directory on containerd's PATH for links to the shims ("-": none)`)
	fs.StringVar(&f.stateDir, "state-dir", installer.DefaultStateDir, "node directory for state, lock and artifact cache")
	fs.StringVar(&f.unitDir, "unit-dir", installer.DefaultUnitDir, "node directory for sandboxer units")
	fs.StringVar(&f.planFile, "plan", "", "the NodePlan (JSON) to carry out")
	fs.StringVar(&f.resultFile, "result", "", "where to write the NodeResult (JSON), e.g. /dev/termination-log")
	fs.StringVar(&f.shim, "shim", "", "uninstall: the Shim to remove, without a plan")
	fs.StringVar(&f.logFormat, "log-format", "auto", "auto (text on a terminal, JSON otherwise), text or json")
	fs.BoolVar(&f.offline, "offline", false, "install into a root filesystem: no restart, no health check, no units started")
	return f
}

func (f *flags) installer(stdout io.Writer) (*installer.Installer, error) {
	inst := &installer.Installer{
		HostRoot: f.hostRoot, BundleRoot: f.bundleRoot, LinkDir: f.linkDir, StateDir: f.stateDir, UnitDir: f.unitDir, Offline: f.offline,
	}
	for _, d := range []string{f.bundleRoot, f.stateDir, f.unitDir} {
		if len(d) == 0 || d[0] != '/' {
			return nil, fmt.Errorf("directory %q: want an absolute node path", d)
		}
	}
	switch f.logFormat {
	case "auto", "text", "json":
	default:
		return nil, fmt.Errorf("--log-format %q: want auto, text or json", f.logFormat)
	}
	if f.logFormat == "text" || f.logFormat == "auto" && isTerminal(stdout) {
		inst.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
		inst.AfterStep = func(step string) { fmt.Fprintf(stdout, "  ✓ %s\n", step) }
	} else {
		inst.Log = slog.New(slog.NewJSONHandler(stdout, nil))
	}
	return inst, nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// canary reports the kernel the process sees: under a sandboxed runtime it
// is the sandbox's.
func canary(stdout io.Writer) int {
	release := "unknown"
	var u unix.Utsname
	if err := unix.Uname(&u); err == nil {
		release = unix.ByteSliceToString(u.Release[:])
	}
	fmt.Fprintf(stdout, "shimkit canary: ok (kernel %s)\n", release)
	return ExitOK
}
