package operator

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/shimkit/shimkit/internal/operator/pin"
)

// DefaultInstallerServiceAccount is the installer pods' ServiceAccount
// unless Options.InstallerServiceAccount names another.
const DefaultInstallerServiceAccount = "shimkit-installer"

// DefaultBatchWindow is Options.BatchWindow's default.
const DefaultBatchWindow = 2 * time.Second

// DefaultGatePeriod is Options.GatePeriod's default.
const DefaultGatePeriod = 10 * time.Second

// DefaultVerifyPeriod is Options.VerifyPeriod's default.
const DefaultVerifyPeriod = 6 * time.Hour

// Options configure the reconciler.
type Options struct {
	// InstallerImage runs shimkit-installer on the nodes (required).
	InstallerImage string
	// Namespace is where the per-node Jobs run (required). A Shim's
	// OCI pull secret must be in this namespace: a Shim whose
	// pullSecretRef names another one is refused (PullSecretNamespace).
	Namespace string
	// JobTTL is how long finished Jobs (and their pods' logs) are kept;
	// default 1h. FailedJobTTL is how long a failed one is kept; default
	// 24h (never less than JobTTL).
	JobTTL       time.Duration
	FailedJobTTL time.Duration
	// Logs reads an installer Job's log, to keep a copy of a failed run's
	// (kubectl shimkit logs shows it once the Job is gone; shimkit-operator
	// sets ClientsetLogs); nil: no copy is kept.
	Logs JobLogs
	// JobDeadline bounds one Job; default 10m.
	JobDeadline time.Duration
	// JobBackoffLimit is how often a failed installer pod is retried;
	// default 2. The installer is idempotent, so a retry is safe; it helps
	// when a pod's exit is lost to a containerd restart of another shim's
	// installer on the same node (the pod then ends Unknown). The
	// installer's final exit codes (plan.FinalExitCodes: rolled back, a
	// refusal such as Conflict) fail the Job at once anyway.
	// Set it to -1 for no retries.
	JobBackoffLimit int32
	// HostRoot is where the node's / is mounted in the installer pod;
	// default /host.
	HostRoot string
	// BundleRoot and LinkDir are the node directories of the bundles and
	// of the links on containerd's PATH (nodejob.Spec); empty: the
	// installer's (/opt/shimkit, /usr/local/bin).
	BundleRoot, LinkDir string
	// ResyncPeriod requeues a Shim that is not done, as a safety net to the
	// Job and Node watches; default 30s.
	ResyncPeriod time.Duration
	// ImagePullPolicy of the installer container; default IfNotPresent.
	ImagePullPolicy string
	// Preset names the nodes' distribution layout (containerd, k3s, rke2,
	// microk8s, k0s) in every plan; empty: each installer detects it.
	Preset string
	// ConfigMode is how handlers are registered: auto, file or drop-in;
	// empty: auto.
	ConfigMode string
	// RestartTimeout is how long the node's runtime (containerd, or CRI-O
	// on a CRI-O node) may take to come back healthy after a restart; 0: the installer's default. The installer pods'
	// grace period follows from it (nodejob.GracePeriodSeconds).
	RestartTimeout time.Duration
	// HostPID runs the installer pods in the node's PID namespace. The
	// installer restarts containerd over the system D-Bus socket
	// (/run/dbus/system_bus_socket), which needs none; only nodes with
	// systemd but no D-Bus daemon need it, for systemd's private socket,
	// which answers only processes of its own PID namespace.
	HostPID bool
	// MaxRestartingNodes caps how many nodes run an installer (and so may
	// restart containerd) at once, across all Shims, on top of each
	// Shim's maxUpdate; 0: no cap beyond those. Whatever it is, a node
	// runs at most one installer at a time.
	MaxRestartingNodes int
	// BatchWindow is how long a Shim that has nodes to install waits for
	// other Shims changed with it to offer theirs, so that one installer
	// run per node installs them all with one containerd restart; it only
	// waits after a change of its own, or while another Shim has an
	// unreconciled change or pending installs. Default 2s; negative: every
	// Shim's installs run alone.
	BatchWindow time.Duration
	// VerifyPeriod is how often each node that has a Shim at its current
	// spec is checked against what its install recorded (the installed
	// files' digests, the handlers in containerd's config, the spec and
	// artifact), by a verifying installer Job that changes nothing; a node
	// that drifted is installed again under maxUpdate. The install counts
	// as a verification. Default 6h; negative: never.
	VerifyPeriod time.Duration
	// InstallerServiceAccount is the installer pods' ServiceAccount, in
	// Namespace: it may create, read and delete the canary pods there (and
	// an admission policy narrows which); default shimkit-installer. Its
	// token is mounted only into the pods of plans with a canary.
	InstallerServiceAccount string
	// InstallerEnv is added to the installer container's environment
	// (the operator's manager passes its own KUBERNETES_SERVICE_HOST and
	// _PORT, so that installers reach the API server as it does).
	InstallerEnv []corev1.EnvVar
	// Resolver pins each Shim's artifact to a digest, verifying its
	// signature when the spec asks; default an ArtifactResolver.
	Resolver Resolver
	// Clock tells the progressive-delivery rules the time (maintenance
	// windows, bakes); default the real clock.
	Clock clock.PassiveClock
	// PhaseReport, when set, runs every reconcile's client and API reader
	// through phase.Checked: a write made before the reconcile's decision
	// is complete is refused and reported, a read made after it is
	// reported. For developers of the operator and its tests
	// (shimkit-operator --check-phases); nil: unchecked.
	PhaseReport func(error)
	// GatePeriod is how often a rollout whose health gate watches is
	// looked at again; default DefaultGatePeriod.
	GatePeriod time.Duration
	// ServerVersion is the API server's gitVersion (v1.36.0): with each
	// node's kubelet and containerd versions it says whether a Shim's
	// image reaches the installer as an image volume or by copy
	// (fetchStrategy.type image). SetupWithManager asks the API server
	// when it is empty; unknown, every node copies.
	ServerVersion string

	// resolveBackoff is the first wait before a failed resolution is
	// asked again unchanged (default pin.DefaultBackoff; tests
	// shorten it through export_test.go).
	resolveBackoff time.Duration
}

func (o Options) withDefaults() Options {
	switch o.JobBackoffLimit {
	case 0:
		o.JobBackoffLimit = 2
	case -1:
		o.JobBackoffLimit = 0
	}
	if o.JobTTL == 0 {
		o.JobTTL = time.Hour
	}
	if o.FailedJobTTL == 0 {
		o.FailedJobTTL = 24 * time.Hour
	}
	o.FailedJobTTL = max(o.FailedJobTTL, o.JobTTL)
	if o.JobDeadline == 0 {
		o.JobDeadline = 10 * time.Minute
	}
	if o.HostRoot == "" {
		o.HostRoot = "/host"
	}
	if o.ResyncPeriod == 0 {
		o.ResyncPeriod = 30 * time.Second
	}
	if o.BatchWindow == 0 {
		o.BatchWindow = DefaultBatchWindow
	}
	if o.VerifyPeriod == 0 {
		o.VerifyPeriod = DefaultVerifyPeriod
	}
	if o.resolveBackoff <= 0 {
		o.resolveBackoff = pin.DefaultBackoff
	}
	if o.Resolver == nil {
		o.Resolver = &ArtifactResolver{}
	}
	if o.InstallerServiceAccount == "" {
		o.InstallerServiceAccount = DefaultInstallerServiceAccount
	}
	if o.ImagePullPolicy == "" {
		o.ImagePullPolicy = "IfNotPresent"
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.GatePeriod <= 0 {
		o.GatePeriod = DefaultGatePeriod
	}
	return o
}
