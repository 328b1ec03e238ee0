// Command shimkit-installer installs, upgrades, verifies and removes a
// containerd shim on the node it runs on; see package installer/cli. A
// plan's canary runs as a Pod on the node (package installer/canarypod),
// through the API server of the in-cluster config or of $KUBECONFIG.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/rest"

	"github.com/shimkit/shimkit/installer"
	"github.com/shimkit/shimkit/internal/installer/canarypod"
	"github.com/shimkit/shimkit/internal/installer/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.RunWith(ctx, os.Args[1:], os.Stdout, os.Stderr, podCanary)
	stop()
	os.Exit(code)
}

// podCanary runs canaries as Pods on the node.
func podCanary(node string) (installer.CanaryRunner, error) {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, err
	}
	c, err := canarypod.NewRESTPods(cfg)
	if err != nil {
		return nil, err
	}
	return canarypod.New(c, node), nil
}
