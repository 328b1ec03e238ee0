package plugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/frontend/manager"
)

// DefaultNamespace is the operator's namespace unless -n names another.
const DefaultNamespace = "shimkit-system"

// The operator as the chart deploys it: its pods' label, and the Lease
// its leader holds.
const (
	operatorLease = "shimkit-operator.containerd.x-k8s.io"
)

var operatorLabels = map[string]string{"app.kubernetes.io/name": "shimkit-operator"}

// options are what every command shares: kubectl's connection flags, the
// operator's namespace, the streams, and the exit code a command sets.
type options struct {
	streams genericiooptions.IOStreams
	config  *genericclioptions.ConfigFlags
	exit    int
	// detailed: plan --detailed-exitcode, whose errors exit 1.
	detailed bool
	// verbosity is -v: from 6, the requests are logged.
	verbosity int
}

func newOptions(streams genericiooptions.IOStreams) *options {
	return &options{streams: streams, config: genericclioptions.NewConfigFlags(false)}
}

// addConnectionFlags adds kubectl's flags (--kubeconfig, --context,
// --cluster, --user, --as, --request-timeout, -n, ...) to every command.
func (o *options) addConnectionFlags(root *cobra.Command) {
	o.config.AddFlags(root.PersistentFlags())
	if f := root.PersistentFlags().Lookup("namespace"); f != nil {
		f.Usage = "the operator's namespace, where its installer Jobs run (Shims are cluster-scoped)"
		f.DefValue = DefaultNamespace
	}
	if f := root.PersistentFlags().Lookup("cache-dir"); f != nil {
		f.DefValue = "$HOME/.kube/cache" // the help says where, not this machine's path
	}
}

// namespace is the operator's namespace: -n, else DefaultNamespace (not
// the kubeconfig context's namespace: Shims are cluster-scoped, and the
// operator lives in its own).
func (o *options) namespace() string {
	if ns := *o.config.Namespace; ns != "" {
		return ns
	}
	return DefaultNamespace
}

// contextName is the kubeconfig context the command uses.
func (o *options) contextName() string {
	if c := *o.config.Context; c != "" {
		return c
	}
	raw, err := o.config.ToRawKubeConfigLoader().RawConfig()
	if err != nil || raw.CurrentContext == "" {
		return "(none)"
	}
	return raw.CurrentContext
}

// reader connects to the cluster with the flags' kubeconfig.
func (o *options) reader() (reader, error) {
	cfg, err := o.config.ToRESTConfig()
	if err != nil {
		return reader{}, fmt.Errorf("kubeconfig: %w", err)
	}
	scheme, err := manager.Scheme()
	if err != nil {
		return reader{}, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return reader{}, o.explain(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return reader{}, err
	}
	return reader{c: c, cs: cs, namespace: o.namespace()}, nil
}

// explain says what an error from the cluster means for the command,
// naming one cause and the kubeconfig context: no answer in time, nothing
// listening, no network path, a server that is no Kubernetes API server
// (a proxy or a wrong URL: 404 for /api), no Shim API (the CRD), or
// credentials the server refuses.
func (o *options) explain(err error) error {
	var netErr net.Error
	var opErr *net.OpError
	ctxName := o.contextName()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.DeadlineExceeded), apierrors.IsTimeout(err), apierrors.IsServerTimeout(err), errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Errorf("the cluster of context %q did not answer in time (%s): %w", ctxName, o.requestTimeout(), err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("cannot reach the cluster of context %q: nothing listens at %s: %w", ctxName, o.server(), err)
	case errors.As(err, &opErr):
		return fmt.Errorf("cannot reach the cluster of context %q: %w", ctxName, err)
	case isNoShimAPI(err) && !meta.IsNoMatchError(err) && o.notAPIServer():
		return fmt.Errorf("the server of context %q (%s) is not a Kubernetes API server: it answers 404 for /api (a proxy in the way, or a wrong server in the kubeconfig): %w", ctxName, o.server(), err)
	case meta.IsNoMatchError(err), isNoShimAPI(err):
		return fmt.Errorf("the Shim API (shims.containerd.x-k8s.io) is not installed in the cluster of context %q: install shimkit's chart: %w", ctxName, err)
	case apierrors.IsUnauthorized(err), apierrors.IsForbidden(err):
		return fmt.Errorf("context %q: %w", ctxName, err)
	}
	return err
}

// requestTimeout says which bound the request ran into: --request-timeout
// as given, else the connection's own.
func (o *options) requestTimeout() string {
	if t := o.config.Timeout; t != nil && *t != "" && *t != "0" {
		return "--request-timeout " + *t
	}
	return "no --request-timeout: the connection's own bound"
}

// server is the API server's URL the kubeconfig names.
func (o *options) server() string {
	cfg, err := o.config.ToRESTConfig()
	if err != nil {
		return "(none)"
	}
	return cfg.Host
}

// notAPIServer: the server answers 404 for /api, which every Kubernetes
// API server serves.
func (o *options) notAPIServer() bool {
	cfg, err := o.config.ToRESTConfig()
	if err != nil {
		return false
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return apierrors.IsNotFound(dc.RESTClient().Get().AbsPath("/api").Do(ctx).Error())
}

// isNoShimAPI: the API server has no Shim resource (a 404 of the list
// itself, not of one Shim).
func isNoShimAPI(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsNotFound(err) {
		return false
	}
	d := status.Status().Details
	return d == nil || d.Name == ""
}

// warnNoOperator writes a warning when nothing shows an operator in the
// namespace: no running pod of the chart's operator and no fresh leader
// Lease. What cannot be read (RBAC) warns of nothing.
func (o *options) warnNoOperator(ctx context.Context, r reader, what string) {
	var pods corev1.PodList
	if err := r.c.List(ctx, &pods, client.InNamespace(r.namespace), client.MatchingLabels(operatorLabels)); err != nil {
		return
	}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning {
			return
		}
	}
	lease := &coordinationv1.Lease{}
	switch err := r.c.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: operatorLease}, lease); {
	case err == nil && fresh(lease, time.Now()):
		return
	case err != nil && !apierrors.IsNotFound(err):
		return
	}
	fmt.Fprintf(o.streams.ErrOut, "warning: no shimkit operator runs in namespace %s of context %q (-n names its namespace): %s\n", r.namespace, o.contextName(), what)
}

// fresh: the Lease was renewed within twice its duration.
func fresh(l *coordinationv1.Lease, now time.Time) bool {
	if l.Spec.RenewTime == nil {
		return false
	}
	d := 15 * time.Second
	if l.Spec.LeaseDurationSeconds != nil {
		d = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return now.Sub(l.Spec.RenewTime.Time) < 2*d
}
