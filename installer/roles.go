package installer

import (
	"context"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/installer/runtime"
	"github.com/shimkit/shimkit/internal/installer/source"
	"github.com/shimkit/shimkit/internal/installer/systemd"
)

// Runtime is the node's container runtime as an operation's steps see it:
// the one role that differs between containerd and CRI-O. Every other step
// (fetch, bundle, links, units, state, canary) is the same on both.
//
// The installer picks the implementation per node (the plan's runtime,
// else detection): containerd's edits its config with package
// containerdconfig and restarts the preset's unit; CRI-O's writes a
// drop-in of shimkit's own with package crioconfig and restarts
// crio.service. Both restart through systemd, never with SIGHUP, and
// check over CRI. installertest.FakeRuntime is the in-memory one of tests.
type Runtime interface {
	// Configure writes the handlers' config (and removes the handlers
	// the edit drops) as one change, checked before anything is written.
	// A failed Configure leaves nothing changed.
	Configure(ctx context.Context, e ConfigEdit) (ConfigChange, error)
	// Restart restarts the runtime so that it reads its config again,
	// and returns once the restart ended.
	Restart(ctx context.Context) error
	// Check waits until the runtime is ready and the handler is
	// registered (present) or gone (!present); handler "" checks only
	// readiness.
	Check(ctx context.Context, handler string, present bool) error
}

// ConfigChange is a config edit on disk, pending until it is committed or
// rolled back byte for byte. containerdconfig.Change and crioconfig.Change
// are ones.
type ConfigChange = runtime.ConfigChange

// ConfigEdit is what one Shim's operation asks of the runtime's config.
type ConfigEdit = runtime.ConfigEdit

// Errors of the node's runtime, checked with errors.Is.
var (
	// ErrRuntimeUnsupported: the plan asks the node's runtime for what it
	// does not have (a sandboxer's proxy plugin, or a migration from
	// another installer, on CRI-O; a handler CRI-O cannot run). Nothing
	// was changed.
	ErrRuntimeUnsupported = runtime.ErrRuntimeUnsupported
	// ErrAmbiguousRuntime: the node has both containerd and CRI-O, and the
	// plan does not say which one its handlers go to (NodePlan.Runtime).
	ErrAmbiguousRuntime = runtime.ErrAmbiguousRuntime
	// ErrRestartFailed: the restart job did not end in "done".
	ErrRestartFailed = systemd.ErrRestartFailed
	// ErrNoUnit: none of the candidate units runs containerd.
	ErrNoUnit = systemd.ErrNoUnit
	// ErrUnhealthy: containerd did not become ready as wanted in time.
	ErrUnhealthy = runtime.ErrUnhealthy
	// ErrUnitFailed: a unit's start job did not end in "done".
	ErrUnitFailed = systemd.ErrUnitFailed
)

// Restarter restarts containerd so that it reads its configuration again.
// containerd exits on SIGHUP rather than reloading, so no Restarter ever
// sends it.
type Restarter interface {
	// Restart restarts containerd and returns once the restart job ended.
	Restart(ctx context.Context) error
	// ResetFailed clears a failed state (systemd's start limit) so that the
	// next Restart runs.
	ResetFailed(ctx context.Context) error
}

// RestartFunc adapts a function to Restarter; ResetFailed does nothing. It
// serves process supervisors and tests.
type RestartFunc func(ctx context.Context) error

// Restart calls f.
func (f RestartFunc) Restart(ctx context.Context) error { return f(ctx) }

// ResetFailed has nothing to reset.
func (f RestartFunc) ResetFailed(context.Context) error { return nil }

// SystemdRestarter restarts a systemd unit over D-Bus, from inside a
// privileged pod or on the node itself, with nothing installed on the host:
// it connects to systemd's private socket under the host root, or to the
// system bus socket when the private one refuses (it does for a process
// outside systemd's PID namespace). Units are the candidate units, in
// order; the one restarted is the one that runs containerd.
type SystemdRestarter = systemd.Restarter

// HealthChecker tells whether containerd came back healthy after a restart.
type HealthChecker interface {
	// Check waits until containerd is ready and the handler is registered
	// (present) or gone (!present), or ctx is done.
	Check(ctx context.Context, handler string, present bool) error
}

// HealthFunc adapts a function to HealthChecker, for tests and for
// runtimes checked another way.
type HealthFunc func(ctx context.Context, handler string, present bool) error

// Check calls f.
func (f HealthFunc) Check(ctx context.Context, handler string, present bool) error {
	return f(ctx, handler, present)
}

// CRIHealth asks containerd over CRI on its socket: RuntimeReady, and the
// handler among runtimeHandlers (containerd 2.x) or in the verbose config
// (1.x).
type CRIHealth = runtime.CRIHealth

// Versioner tells containerd's version. CRIHealth is one; the installer
// asks it whether containerd needs shim binaries on its PATH.
type Versioner interface {
	RuntimeVersion(ctx context.Context) (string, error)
}

// UnitManager runs the systemd units of sandboxer daemons. The installer
// writes the unit files itself; the manager makes systemd read them and
// starts or stops units.
type UnitManager interface {
	// Reload makes systemd read unit files again (daemon-reload).
	Reload(ctx context.Context) error
	// Restart (re)starts a unit and waits until its start job is done.
	Restart(ctx context.Context, unit string) error
	// Stop stops a unit; a unit systemd does not know is already stopped.
	Stop(ctx context.Context, unit string) error
}

// SystemdUnits manages units over D-Bus, connecting as SystemdRestarter
// does.
type SystemdUnits = systemd.Units

// ArtifactVerifier checks that a plan's pinned artifact is signed as the
// plan's Verification asks, and says by whom. It reads signatures only:
// nothing of the artifact is downloaded.
type ArtifactVerifier interface {
	VerifyArtifact(ctx context.Context, a *plan.Artifact) (signer string, err error)
}

// VerifierFunc is an ArtifactVerifier of a function: the in-memory
// verifier of unit tests.
type VerifierFunc func(ctx context.Context, a *plan.Artifact) (string, error)

// VerifyArtifact calls f.
func (f VerifierFunc) VerifyArtifact(ctx context.Context, a *plan.Artifact) (string, error) {
	return f(ctx, a)
}

// SignatureVerifier is the installer's ArtifactVerifier, with package
// signature: an OCI artifact's signatures are found next to its pinned
// digest in its repository (sigstore bundle referrers, cosign's tag
// scheme); an http artifact's signature is read from SignatureURL. The
// pull secret and trusted root are read at the plan's paths.
type SignatureVerifier = source.SignatureVerifier

// CanaryRunner runs a plan's canary pod and tells whether it ran to a
// zero exit.
type CanaryRunner interface {
	RunCanary(ctx context.Context, c plan.Canary) error
}

// CanaryFunc adapts a function to CanaryRunner, for tests.
type CanaryFunc func(ctx context.Context, c plan.Canary) error

// RunCanary calls f.
func (f CanaryFunc) RunCanary(ctx context.Context, c plan.Canary) error { return f(ctx, c) }

// The adapters are their roles. The aliased implementations are checked
// against the same interfaces where the internal packages define them.
var (
	_ CanaryRunner     = CanaryFunc(nil)
	_ Restarter        = RestartFunc(nil)
	_ HealthChecker    = HealthFunc(nil)
	_ ArtifactVerifier = VerifierFunc(nil)
	_ Runtime          = runtime.Runtime(nil)
)
