// Command embedded-operator shows another operator (Spinkube's, say) adding
// the Shim reconciler to its own controller-runtime manager, next to its
// own controllers, sharing one cache, one client and one metrics endpoint.
//
//	embedded-operator -installer-image registry.example/shimkit-installer:v0.1.0
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

func main() {
	image := flag.String("installer-image", "shimkit-installer:latest", "image of shimkit-installer")
	ns := flag.String("namespace", "spinkube-system", "namespace of the installer Jobs")
	flag.Parse()
	if err := run(ctrl.SetupSignalHandler(), ctrl.GetConfigOrDie(), *image, *ns, ":8080"); err != nil {
		fmt.Fprintln(os.Stderr, "embedded-operator:", err)
		os.Exit(1)
	}
}

// run builds the host operator's manager and adds the Shim reconciler to it.
func run(ctx context.Context, cfg *rest.Config, image, namespace, metricsAddr string) error {
	scheme := runtime.NewScheme()
	// The host operator's own types would be added here too.
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	// The reconciler's cache settings: Jobs of one namespace only, and Jobs
	// and Nodes cached trimmed (a host operator whose own controllers read
	// whole Nodes would leave the Node transform out).
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: metricsAddr}, Cache: operator.CacheOptions(namespace)})
	if err != nil {
		return err
	}
	shims, err := operator.New(mgr.GetClient(), mgr.GetEventRecorder("spinkube-shims"), operator.Options{
		InstallerImage: image,
		Namespace:      namespace,
	})
	if err != nil {
		return err
	}
	if err := shims.SetupWithManager(mgr); err != nil {
		return err
	}
	// ... the host operator's own controllers: ctrl.NewControllerManagedBy(mgr)...
	return mgr.Start(ctx)
}
