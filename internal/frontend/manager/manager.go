// Package manager runs the reference shimkit operator: a controller-runtime
// manager with the Shim reconciler, leader election, health and readiness
// probes, Prometheus metrics and structured (JSON) logs.
package manager

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/shimkit/shimkit/internal/version"
	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// Run runs the operator until ctx is done and returns the exit code.
func Run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) int {
	fs := flag.NewFlagSet("shimkit-operator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: shimkit-operator [flags]\n       shimkit-operator migrate [--apply] [NAME ...]   (runtime-class-manager's Shims to shimkit's: shimkit-operator migrate --help)\n\nFlags:\n")
		fs.PrintDefaults()
	}
	env := func(k, def string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return def
	}
	var (
		opts operator.Options
		m    managerFlags
	)
	fs.StringVar(&m.kubeconfig, "kubeconfig", getenv("KUBECONFIG"), "kubeconfig file; in-cluster config when empty [KUBECONFIG]")
	fs.BoolVar(&m.leaderElect, "leader-elect", false, "elect a leader, for more than one replica")
	fs.StringVar(&m.metricsAddr, "metrics-bind-address", ":8080", `metrics endpoint ("0" disables)`)
	fs.StringVar(&m.probeAddr, "health-probe-bind-address", ":8081", "health and readiness probes")
	fs.StringVar(&m.pprofAddr, "pprof-bind-address", "0", `Go profiling endpoint, /debug/pprof ("0" disables)`)
	// As controller-runtime's own default: the API server's priority and
	// fairness paces the operator, not a client-side limit (which doubled
	// a 1,000-node rollout's time at 50 per second).
	fs.Float64Var(&m.qps, "kube-api-qps", -1, "requests per second to the API server (0 or less: no client-side limit; the API server's priority and fairness applies)")
	fs.IntVar(&m.burst, "kube-api-burst", 100, "request burst to the API server (with a positive --kube-api-qps)")
	fs.StringVar(&m.memoryLimit, "memory-limit", "auto", `soft memory limit of the Go runtime, as a quantity (230Mi); "auto": 90% of the container's memory limit (its cgroup's), unless GOMEMLIMIT is set; "0": none`)
	fs.StringVar(&opts.InstallerImage, "installer-image", env("SHIMKIT_INSTALLER_IMAGE", ""), "image of shimkit-installer [SHIMKIT_INSTALLER_IMAGE]")
	fs.StringVar(&opts.Namespace, "namespace", env("POD_NAMESPACE", "shimkit-system"), "namespace of the per-node Jobs [POD_NAMESPACE]")
	fs.DurationVar(&opts.JobTTL, "job-ttl", time.Hour, "how long finished installer Jobs (and their logs) are kept")
	fs.DurationVar(&opts.FailedJobTTL, "failed-job-ttl", 24*time.Hour, "how long failed installer Jobs (and their logs) are kept; a copy of each node's last failed log stays as long as the Shim")
	fs.DurationVar(&opts.JobDeadline, "job-deadline", 10*time.Minute, "how long one node's Job may run")
	fs.StringVar(&opts.ImagePullPolicy, "installer-pull-policy", "IfNotPresent", "pull policy of the installer image")
	fs.StringVar(&opts.Preset, "containerd-preset", "", "the nodes' distribution: containerd, k3s, rke2, microk8s, k0s (default: detected on each node)")
	fs.StringVar(&opts.ConfigMode, "containerd-config-mode", "", "how handlers are registered: auto, file or drop-in (default auto)")
	fs.DurationVar(&opts.RestartTimeout, "containerd-restart-timeout", 0, "how long the node's runtime (containerd, or CRI-O on a CRI-O node) may take to come back after a restart (default: the installer's)")
	fs.IntVar(&opts.MaxRestartingNodes, "max-restarting-nodes", 0, "how many nodes may run an installer (and restart containerd) at once, across all Shims (0: each Shim's maxUpdate alone bounds it)")
	fs.DurationVar(&opts.BatchWindow, "batch-window", operator.DefaultBatchWindow, "how long a Shim with installs to do waits for other Shims changed with it, so that one installer run per node installs them all with one containerd restart (0: every Shim's installs run alone)")
	fs.DurationVar(&opts.VerifyPeriod, "verify-period", operator.DefaultVerifyPeriod, "how often each node that has a Shim is checked against what its install recorded (files, handlers, artifact) by a verifying installer Job; a node that drifted is installed again (0: never)")
	fs.StringVar(&opts.BundleRoot, "bundle-root", "", "node directory of the Shims' bundles, writable and executable, for nodes whose /opt is read-only (default /opt/shimkit)")
	fs.StringVar(&opts.LinkDir, "link-dir", "", `node directory on containerd's PATH for links to the shims ("-": none; default /usr/local/bin)`)
	fs.BoolVar(&opts.HostPID, "installer-host-pid", false, "run the installer pods in the node's PID namespace (only for nodes with systemd but no D-Bus daemon)")
	checkPhases := fs.Bool("check-phases", false, "refuse and log every write a reconcile makes before its decision is complete, and log every read it makes after (for developers of the operator; the end-to-end tests run with it)")
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *showVersion {
		fmt.Fprintln(stderr, version.String("shimkit-operator"))
		return 0
	}
	limit, err := memoryLimit(m.memoryLimit, getenv("GOMEMLIMIT"), cgroupMemoryLimit)
	if err != nil {
		fmt.Fprintf(stderr, "--memory-limit: %v\n", err)
		return 2
	}
	if limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	// The flags' 0 is "off"; the Options' 0 is "the default".
	if opts.BatchWindow == 0 {
		opts.BatchWindow = -1
	}
	if opts.VerifyPeriod == 0 {
		opts.VerifyPeriod = -1
	}
	// The installers' canary pods are created through the API server at
	// the address this process uses (kube-proxy-free clusters point
	// operators at the API server's own address).
	for _, k := range []string{"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"} {
		if v := getenv(k); v != "" {
			opts.InstallerEnv = append(opts.InstallerEnv, corev1.EnvVar{Name: k, Value: v})
		}
	}
	log := logr.FromSlogHandler(slog.NewJSONHandler(stderr, nil))
	ctrl.SetLogger(log)
	log.Info("starting shimkit-operator", "version", version.Version())
	if *checkPhases {
		opts.PhaseReport = func(err error) { log.Error(err, "reconcile out of phase") }
	}
	if err := run(ctx, opts, m); err != nil {
		log.Error(err, "operator stopped")
		return 1
	}
	return 0
}

// managerFlags are the flags of the manager itself (not the reconciler's).
type managerFlags struct {
	kubeconfig                        string
	leaderElect                       bool
	metricsAddr, probeAddr, pprofAddr string
	qps                               float64
	burst                             int
	memoryLimit                       string
}

// memoryLimit is the soft memory limit the flag asks for (0: leave the
// runtime's, which GOMEMLIMIT sets). The collector's headroom (GOGC=100:
// a heap twice what is live) is most of the operator's peak memory at
// thousands of nodes (BENCHMARKS.md); under a limit the collector runs
// more often as the heap nears it instead of the container being killed.
// "auto" leaves a tenth of the container's limit to what the runtime does
// not count: the binary's pages, the stacks' slack.
func memoryLimit(flag, gomemlimit string, cgroup func() int64) (int64, error) {
	switch flag {
	case "auto":
		if gomemlimit != "" {
			return 0, nil
		}
		return cgroup() / 10 * 9, nil
	case "", "0":
		return 0, nil
	}
	q, err := resource.ParseQuantity(flag)
	if err != nil {
		return 0, err
	}
	if q.Sign() < 0 {
		return 0, fmt.Errorf("%s: negative", flag)
	}
	return q.Value(), nil
}

// cgroupMemoryLimit is this process's cgroup memory limit in bytes (0:
// none, or not found): cgroup v2's memory.max, else v1's
// memory.limit_in_bytes (whose "no limit" is a huge number).
func cgroupMemoryLimit() int64 {
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		if err != nil || n <= 0 || n >= 1<<62 { // "max", or v1's unlimited
			return 0
		}
		return n
	}
	return 0
}

func run(ctx context.Context, opts operator.Options, m managerFlags) error {
	cfg, err := RESTConfig(m.kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = float32(m.qps), m.burst
	if m.qps <= 0 {
		cfg.QPS = -1 // client-go reads 0 as its default of 5 per second
	}
	scheme, err := Scheme()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: m.metricsAddr},
		HealthProbeBindAddress:  m.probeAddr,
		PprofBindAddress:        m.pprofAddr,
		LeaderElection:          m.leaderElect,
		LeaderElectionID:        "shimkit-operator.containerd.x-k8s.io",
		LeaderElectionNamespace: opts.Namespace,
		// A leader that stops (SIGTERM: a rollout of the Deployment, a
		// drained node) gives its Lease up once its reconciles ended, so
		// the next one takes over within a retry period (2 s) instead of
		// waiting for the Lease to expire (15 s). Nothing runs after the
		// manager stops that would need the lead.
		LeaderElectionReleaseOnCancel: true,
		// Jobs live in one namespace: watch only there (and need RBAC only
		// there); Jobs and Nodes are cached trimmed.
		Cache: operator.CacheOptions(opts.Namespace),
	})
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	opts.Logs = &operator.ClientsetLogs{Clientset: cs}
	r, err := operator.New(mgr.GetClient(), mgr.GetEventRecorder("shimkit-operator"), opts)
	if err != nil {
		return err
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// Main is the whole of main: signals end the operator gracefully.
func Main() { os.Exit(Run(ctrl.SetupSignalHandler(), os.Args[1:], os.Getenv, os.Stderr)) }

// Scheme is the scheme of the operator and its commands: Kubernetes' own
// types and the Shim API.
func Scheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return scheme, nil
}

// NewClient is a client of the cluster of the kubeconfig file (RESTConfig)
// with Scheme, for the operator's commands (migrate, kubectl shimkit).
func NewClient(kubeconfig string) (client.Client, error) {
	cfg, err := RESTConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}

// RESTConfig loads the kubeconfig file, or when it is empty the in-cluster
// config, $KUBECONFIG or ~/.kube/config.
func RESTConfig(kubeconfig string) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else {
		cfg, err = ctrl.GetConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return cfg, nil
}
