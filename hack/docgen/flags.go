package main

import (
	"bytes"
	"context"
	"fmt"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"strings"

	"github.com/shimkit/shimkit/internal/frontend/manager"
	"github.com/shimkit/shimkit/internal/frontend/migrate"
	"github.com/shimkit/shimkit/internal/frontend/plugin"
	"github.com/shimkit/shimkit/internal/installer/cli"
)

// helpText is one command's --help, as its binary prints it.
type helpText struct {
	command, anchorText, text string
}

// noEnv is an empty environment: the flags' defaults are the binaries'
// own, not this machine's ($KUBECONFIG).
func noEnv(string) string { return "" }

// helps runs each command's --help in this process (the binaries' main
// functions are these calls).
func helps() ([]helpText, error) {
	ctx := context.Background()
	var out []helpText
	var op bytes.Buffer
	manager.Run(ctx, []string{"--help"}, noEnv, &op)
	out = append(out, helpText{"shimkit-operator --help", "shimkit-operator", op.String()})
	var mig, migErr bytes.Buffer
	migrate.Run(ctx, []string{"--help"}, noEnv, &mig, &migErr)
	out = append(out, helpText{"shimkit-operator migrate --help", "shimkit-operator migrate", mig.String() + migErr.String()})
	// install, uninstall, verify and status share their flags: one text
	// when their helps agree.
	var first string
	for _, cmd := range []string{"install", "uninstall", "verify", "status"} {
		var o, e bytes.Buffer
		cli.Run(ctx, []string{cmd, "--help"}, &o, &e)
		text := o.String() + e.String()
		if first == "" {
			first = text
			out = append(out, helpText{"shimkit-installer install|uninstall|verify|status --help", "shimkit-installer", text})
			continue
		}
		if text != first {
			out = append(out, helpText{"shimkit-installer " + cmd + " --help", "shimkit-installer " + cmd, text})
		}
	}
	var bo, be bytes.Buffer
	cli.Run(ctx, []string{"boot-units", "--help"}, &bo, &be)
	out = append(out, helpText{"shimkit-installer boot-units --help", "shimkit-installer boot-units", bo.String() + be.String()})
	pluginHelp := func(args ...string) string {
		var po, pe bytes.Buffer
		plugin.Run(ctx, args, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &po, ErrOut: &pe})
		return po.String() + pe.String()
	}
	root := pluginHelp("--help")
	out = append(out, helpText{"kubectl shimkit --help", "kubectl shimkit", root})
	for _, cmd := range commandsOf(root) {
		args := []string{cmd, "--help"}
		if cmd == "options" {
			args = args[:1] // its output is the help
		}
		out = append(out, helpText{"kubectl shimkit " + strings.Join(args, " "), "kubectl shimkit " + cmd, pluginHelp(args...)})
	}
	for _, h := range out {
		if !strings.Contains(h.text, "-") || len(h.text) < 40 {
			return nil, fmt.Errorf("%s: no help text: %q", h.command, h.text)
		}
	}
	return out, nil
}

// flagsReference is the flags page.
func flagsReference() ([]byte, error) {
	hs, err := helps()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("# Flags reference\n\n")
	b.WriteString("The `--help` of each binary. The chart sets the operator's flags from its values\n")
	b.WriteString("([Helm values](helm-values.md)); the operator passes the installer's in each node's Job.\n")
	b.WriteString("Both binaries print their version with `--version`.\n")
	for _, h := range hs {
		fmt.Fprintf(&b, "\n## %s\n\n```text\n$ %s\n%s```\n", h.anchorText, h.command, h.text)
	}
	return b.Bytes(), nil
}

// commandsOf lists the commands a cobra help text names under
// "Commands:", in its order: every one gets its section.
func commandsOf(help string) []string {
	_, list, _ := strings.Cut(help, "\nCommands:\n")
	var out []string
	for _, line := range strings.Split(list, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			break
		}
		out = append(out, f[0])
	}
	return out
}
