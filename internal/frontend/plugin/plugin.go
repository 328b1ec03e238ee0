package plugin

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/shimkit/shimkit/internal/version"
)

// Exit codes of kubectl shimkit. ExitChanges is plan --exit-code's
// answer, as kubectl diff's: applying would change something; every
// error is above it.
const (
	ExitOK      = 0
	ExitChanges = 1
	ExitUsage   = 2 // a wrong command line: unknown command or flag, bad -o, missing NAME
	ExitFailed  = 3 // the command could not be done: the cluster, the Shim, a refusal
)

// Exit codes of plan --detailed-exitcode, terraform plan's: any error is
// 1 (a wrong command line included), changes 2, nothing to change 0.
const (
	ExitDetailedError   = 1
	ExitDetailedChanges = 2
)

// detailedFlag is the flag that asks for terraform's exit codes.
const detailedFlag = "--detailed-exitcode"

// fieldOwner is the field manager of what kubectl shimkit writes (pause,
// resume, rerun) and of its dry runs.
const fieldOwner = "kubectl-shimkit"

// usageError is a wrong command line (ExitUsage).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// Run runs kubectl shimkit with args (without the program's name) on the
// streams and returns its exit code (ExitOK, ExitChanges, ExitUsage,
// ExitFailed).
func Run(ctx context.Context, args []string, streams genericiooptions.IOStreams) int {
	o := newOptions(streams)
	root := o.rootCommand()
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return o.exit
	}
	name := "kubectl shimkit"
	if cmd != nil && cmd != root {
		name += " " + cmd.Name()
	}
	fmt.Fprintf(streams.ErrOut, "error: %s: %v\n", name, err)
	usage := errors.As(err, new(usageError))
	if usage {
		fmt.Fprintf(streams.ErrOut, "See '%s --help'.\n", name)
	}
	switch {
	case o.detailed || detailedAsked(args):
		return ExitDetailedError
	case usage:
		return ExitUsage
	}
	return ExitFailed
}

// rootCommand is kubectl shimkit and its commands, with kubectl's
// connection flags (k8s.io/cli-runtime) on every command.
func (o *options) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "shimkit",
		Short: "What the shimkit operator sees and would do, and the few writes an admin needs",
		Long: `kubectl shimkit shows what the shimkit operator sees (status), what it would
do (plan), an installer's log (logs), and pauses, resumes or retries a
rollout through the API the operator honours.

Exit status: 0 done; 1 only with plan --exit-code, when applying would
change something; 2 a wrong command line; 3 the command failed. With plan
--detailed-exitcode, terraform's: 0 no change, 1 an error, 2 changes.`,
		Version:       version.String("kubectl-shimkit"),
		SilenceErrors: true,
		SilenceUsage:  true,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl shimkit"},
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown command %q: want one of %s", args[0], commandNames(cmd))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usagef("a command is needed: %s", commandNames(cmd))
		},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetUsageTemplate(usageTemplate)
	root.SetIn(o.streams.In)
	root.SetOut(o.streams.Out)
	root.SetErr(o.streams.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.CompletionOptions.DisableDefaultCmd = true
	o.addConnectionFlags(root)
	o.addVerbosityFlag(root) // before cobra's --version would take -v
	root.AddCommand(statusCommand(o), planCommand(o), bootPlanCommand(o), logsCommand(o), pauseCommand(o, true), pauseCommand(o, false), rerunCommand(o), o.versionCommand(), o.optionsCommand(root))
	return root
}

// usageTemplate is cobra's, with each command's own flags only: the
// connection flags every command takes are kubectl shimkit options', as
// kubectl options' are.
const usageTemplate = `Usage:{{if .Runnable}}
  {{.UseLine}}{{end}}{{if .HasAvailableSubCommands}}
  {{.CommandPath}} [command]{{end}}{{if .HasExample}}

Examples:
{{.Example}}{{end}}{{if .HasAvailableSubCommands}}

Commands:{{range .Commands}}{{if .IsAvailableCommand}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}{{if .HasAvailableLocalFlags}}

Flags:
{{.LocalNonPersistentFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}

Use "kubectl shimkit options" for the flags every command takes (--kubeconfig, --context, -n, --as, --request-timeout, ...).{{if .HasAvailableSubCommands}}
Use "{{.CommandPath}} [command] --help" for more about a command.{{end}}
`

// optionsCommand prints the flags every command takes.
func (o *options) optionsCommand(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "options",
		Short: "The flags every command takes: kubectl's connection flags and -n",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintf(o.streams.Out, "The following options can be passed to any command:\n\n%s", root.PersistentFlags().FlagUsages())
			return err
		},
	}
}

// commandNames lists the commands of cmd.
func commandNames(cmd *cobra.Command) string {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return fmt.Sprint(names)
}

func (o *options) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintln(o.streams.Out, version.String("kubectl-shimkit"))
			return err
		},
	}
}

// exactlyName is an Args check: one argument, the Shim's name.
func exactlyName(_ *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usagef("want the Shim's NAME, got %d arguments", len(args))
	}
	return nil
}

// detailedAsked: the command line asks for --detailed-exitcode, also when
// it could not be parsed (a script reading terraform's codes takes 2 for
// changes, never for a typo).
func detailedAsked(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == detailedFlag || strings.HasPrefix(a, detailedFlag+"=") && a != detailedFlag+"=false" {
			return true
		}
	}
	return false
}
