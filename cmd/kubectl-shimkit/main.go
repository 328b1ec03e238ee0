// Command kubectl-shimkit is the kubectl plugin kubectl shimkit (package
// internal/frontend/plugin): put it on the PATH and run kubectl shimkit
// status NAME, kubectl shimkit plan -f shim.yaml, or kubectl shimkit
// --help.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/shimkit/shimkit/internal/frontend/plugin"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := plugin.Run(ctx, os.Args[1:], genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	stop()
	os.Exit(code)
}
