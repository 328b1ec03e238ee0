// Command kubectl-shimkit is the kubectl plugin kubectl shimkit (package
// operator/plugin): put it on the PATH and run kubectl shimkit status NAME
// or kubectl shimkit plan -f shim.yaml.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/shimkit/shimkit/internal/operator/plugin"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := plugin.Run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
