// Command shimkit-installer installs, upgrades and removes a containerd shim
// on the node it runs on; see package installer/cli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/shimkit/shimkit/installer/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
