package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/shimkit/shimkit/containerdconfig"
)

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("image-builder", flag.ContinueOnError)
	fs.SetOutput(out)
	root := fs.String("root", "", "root filesystem of the image (required)")
	preset := fs.String("preset", "", "distribution preset: containerd, k3s, rke2, microk8s, k0s (default: detected)")
	name := fs.String("name", "", "runtime handler name, as in the RuntimeClass (required)")
	runtimeType := fs.String("runtime-type", "", "io.containerd.<shim>.<version> (required to add)")
	runtimePath := fs.String("runtime-path", "", "absolute path of the shim binary in the image")
	dropIn := fs.Bool("drop-in", false, "always write a drop-in (containerd 2.x configs that import a directory)")
	remove := fs.Bool("remove", false, "remove the handler instead of adding it")
	opts := containerdconfig.OptionsFlag{}
	fs.Var(opts, "option", "handler option key=value (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *root == "" || *name == "" {
		return fmt.Errorf("-root and -name are required")
	}

	p, err := containerdconfig.Detect(*root)
	if *preset != "" {
		p, err = containerdconfig.PresetNamed(*preset)
	}
	if err != nil {
		return err
	}
	target := containerdconfig.Target{Root: *root, Preset: p}
	if *dropIn {
		target.Mode = containerdconfig.ModeDropIn
	}

	var m containerdconfig.Mutator = containerdconfig.NewUninstall(target, *name)
	if !*remove {
		h := containerdconfig.RuntimeHandler{Name: *name, RuntimeType: *runtimeType, RuntimePath: *runtimePath}
		if len(opts) > 0 {
			h.Options = opts
		}
		m = containerdconfig.NewInstall(target, h)
	}
	change, err := m.Apply(ctx)
	if err != nil {
		return err
	}
	// Offline there is no containerd to check, so the change is final.
	if err := change.Commit(); err != nil {
		return err
	}
	if !change.Changed() {
		fmt.Fprintf(out, "%s: handler %s already as wanted; nothing changed\n", p.Name, *name)
		return nil
	}
	verb := "registered"
	if *remove {
		verb = "removed"
	}
	fmt.Fprintf(out, "%s: handler %s %s in %s\n", p.Name, *name, verb, strings.Join(change.Files(), ", "))
	return nil
}
