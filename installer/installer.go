package installer

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/crioconfig"
	"github.com/shimkit/shimkit/fetch"
	"github.com/shimkit/shimkit/internal/installer/bundle"
	"github.com/shimkit/shimkit/internal/installer/layout"
	"github.com/shimkit/shimkit/internal/installer/outcome"
	"github.com/shimkit/shimkit/internal/installer/ownership"
	"github.com/shimkit/shimkit/internal/installer/runtime"
	"github.com/shimkit/shimkit/internal/installer/units"
)

// Errors of a failed operation, checked with errors.Is.
var (
	// ErrRolledBack: the operation failed and the node was restored: the
	// config byte for byte, the bundle, the units, and a healthy containerd.
	ErrRolledBack = outcome.ErrRolledBack
	// ErrRollbackFailed: the operation failed and restoring the node failed
	// too. The node needs attention.
	ErrRollbackFailed = outcome.ErrRollbackFailed
	// ErrInterrupted: the operation was cancelled (SIGTERM, a deadline)
	// and stopped where it was; with ErrRolledBack, the node is as before.
	ErrInterrupted = outcome.ErrInterrupted
	// ErrReserved: the plan asks for a name that belongs to containerd
	// itself (its runc shim).
	ErrReserved = ownership.ErrReserved
	// ErrConflict: something the plan would write exists and shimkit did
	// not write it for this Shim (a handler, unit, proxy plugin or PATH
	// name of an admin, another tool or another Shim), or it was changed
	// after shimkit wrote it. Nothing on the node was changed.
	ErrConflict = ownership.ErrConflict
	// ErrConcurrentEdit: undoing an operation found a file that someone
	// else changed after shimkit wrote it; the file was left as it is, so
	// that their edit is not lost.
	ErrConcurrentEdit = ownership.ErrConcurrentEdit
	// ErrMissingFile: the artifact lacks a file the plan names, or a
	// pattern matches several.
	ErrMissingFile = bundle.ErrMissingFile
	// ErrReadOnlyHost: a directory the install must write is on a
	// read-only filesystem (an immutable OS, a read-only /opt or /usr), or
	// the bundle root, whose binaries containerd runs, is on one mounted
	// noexec (COS mounts some writable directories so). Nothing on the
	// node changed; the node needs its runtime baked into its image, or
	// other directories (BundleRoot, LinkDir).
	ErrReadOnlyHost = layout.ErrReadOnlyHost
	// ErrCanaryFailed: the canary pod did not start with the handler, or
	// its container did not exit 0 within the canary's timeout.
	ErrCanaryFailed = outcome.ErrCanaryFailed
	// ErrNoCanaryRunner: the plan asks for a canary and the Installer has
	// no CanaryRunner to run it.
	ErrNoCanaryRunner = errors.New("the plan has a canary and the installer no canary runner (Installer.Canary)")
)

// Defaults of an Installer, as node paths.
const (
	DefaultBundleRoot = layout.DefaultBundleRoot
	DefaultLinkDir    = layout.DefaultLinkDir
	DefaultStateDir   = layout.DefaultStateDir
	DefaultUnitDir    = layout.DefaultUnitDir
)

// DefaultCanarySettle is Installer.CanarySettle's default: past the
// kubelet's second reconnect attempt. Measured on the end-to-end cluster:
// canaries created at once after the restart took 16–17s when the kubelet
// had not reconnected yet (FailedCreatePodSandBox: connection error), 3–5s
// otherwise.
const DefaultCanarySettle = runtime.DefaultSettle

// Installer carries out node plans on one node. Its paths are node paths,
// resolved under HostRoot: the node's / as mounted in a privileged pod, or
// / itself.
type Installer struct {
	HostRoot string
	// BundleRoot holds one directory per Shim (<BundleRoot>/<shim>), with
	// a directory per version and a "current" link to the installed one;
	// default DefaultBundleRoot.
	BundleRoot string
	// LinkDir gets a symlink to each handler's shim binary, so that
	// containerd finds it on its PATH (containerd 1.6 ignores runtime_path
	// for pod sandboxes); default DefaultLinkDir, "-" for none. An existing
	// file there is never replaced.
	LinkDir string
	// StateDir holds the state file, the node lock and the artifact cache;
	// default DefaultStateDir.
	StateDir string
	// UnitDir is where sandboxer units go; default DefaultUnitDir.
	UnitDir string
	// Runtime, when set, is the node's runtime whatever the plan says
	// (tests: an installertest.FakeRuntime). Otherwise the installer uses containerd's or
	// CRI-O's: the plan's runtime, else containerd when Preset or Mode is
	// set, else the one detected on the node.
	Runtime Runtime
	// Preset overrides the plan's and the detected distribution, and
	// implies containerd.
	Preset *containerdconfig.Preset
	// Mode overrides the plan's config mode, and implies containerd.
	Mode *containerdconfig.Mode
	// CRIO overrides the paths of a CRI-O node (config file, drop-in and
	// state directories), as node paths; default crioconfig's.
	CRIO *crioconfig.Target
	// Restarter defaults to systemd over D-Bus with the preset's units
	// (crio.service on CRI-O).
	Restarter Restarter
	// Health defaults to CRI on the preset's socket (CRI-O's on CRI-O),
	// with the plan's timeout.
	Health HealthChecker
	// Sandboxes lists the runtime's pod sandboxes, which hold handlers
	// and bundle versions (ErrHandlerInUse). Default: CRI on the runtime's
	// socket; none with Runtime, Health or Offline set, unless set.
	Sandboxes SandboxLister
	// Units defaults to systemd over D-Bus.
	Units UnitManager
	// Canary runs the plan's canary pod (shimkit-installer uses a
	// canarypod.Runner, which has kubelet run it). A plan with a canary
	// fails with ErrCanaryFailed without one, unless Offline.
	Canary CanaryRunner
	// CanarySettle is how long after containerd came back from a restart
	// the canary pod is created: the kubelet's connection to containerd
	// reconnects with gRPC's backoff (1s, then ×1.6), and a pod it is given
	// before then fails to get a sandbox ("connection error") and is
	// retried only after the kubelet's pod backoff (10s). Default
	// DefaultCanarySettle; negative: none.
	CanarySettle time.Duration
	// Fetcher, when set, replaces the fetcher built from the plan's
	// artifact (tests, image builders with their own source).
	Fetcher fetch.Fetcher
	// Verifier checks the artifact's signature when the plan asks for
	// it; default SignatureVerifier.
	Verifier ArtifactVerifier
	// Platform defaults to the node's.
	Platform fetch.Platform
	// Offline installs into a root filesystem without restarting or
	// checking the runtime and without starting units, as image builders
	// do.
	Offline bool
	// Log receives progress; default discards.
	Log *slog.Logger
	// AfterStep, when set, is called after each step with its name, for
	// progress displays (and crash tests).
	AfterStep func(step string)
}

// Result says what an operation did.
type Result struct {
	Shim string
	// Runtime is the node's container runtime (plan.RuntimeContainerd
	// or plan.RuntimeCRIO); RestartedUnit the systemd unit restarted
	// (containerd.service, k3s.service, crio.service, ...), when the
	// runtime was restarted through systemd.
	Runtime       string
	RestartedUnit string
	Changed       bool // the config changed
	Restarted     bool
	Upgrade       bool // the Shim was installed before with another spec
	Digest        string
	// VerifiedBy names what verified the artifact's signature.
	VerifiedBy string
	// Files are the node paths of the bundle's files.
	Files []string
	// Drift is, for Verify, how the node differs from the Shim's record
	// and the plan (empty: as recorded); for an install of the spec
	// installed, what it found drifted and repaired.
	Drift []string
	// Duration is the whole operation; RestartDuration the restart and the
	// health check within it.
	Duration        time.Duration
	RestartDuration time.Duration
	// CanaryDuration is how long the plan's canary took to pass; 0 when
	// none ran.
	CanaryDuration time.Duration
}

func (i *Installer) log() *slog.Logger {
	if i.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return i.Log
}

func (i *Installer) step(name string, args ...any) {
	i.log().Info(name, args...)
	if i.AfterStep != nil {
		i.AfterStep(name)
	}
}

// paths returns the Installer's layout.
func (i *Installer) paths() layout.Layout {
	return layout.Layout{Host: i.HostRoot, Bundles: i.BundleRoot, Links: i.LinkDir, State: i.StateDir, Units: i.UnitDir}
}

// runtimeOptions are what the Installer says of the node's runtime: with
// runtime.For, Installer.Runtime, else the kind its Preset or Mode imply
// (containerd), else the plan's, else the detected one.
func (i *Installer) runtimeOptions() runtime.Options {
	return runtime.Options{Layout: i.paths(), Runtime: i.Runtime, Preset: i.Preset, Mode: i.Mode, CRIO: i.CRIO,
		Restarter: i.Restarter, Health: i.Health, Sandboxes: i.Sandboxes, Offline: i.Offline, Log: i.log()}
}

// units returns the Installer's sandboxer units, run by Installer.Units
// (systemd over D-Bus by default).
func (i *Installer) units() units.Units {
	return units.Units{Layout: i.paths(), Manager: i.Units, Offline: i.Offline}
}

// session is an operation that holds the node lock.
type session struct {
	unlock    func()
	state     *State
	recovered bool // an interrupted operation was undone: the runtime must restart
	rt        *runtime.Node
}

// begin takes the node lock, reads the state, recovers an interrupted
// operation; rt is the node's runtime (runtime.For).
func (i *Installer) begin(ctx context.Context, shim string, rt *runtime.Node) (*session, error) {
	unlock, err := i.store().lock(ctx)
	if err != nil {
		return nil, err
	}
	i.step("locked", "shim", shim)
	s := &session{unlock: unlock, rt: rt}
	if s.state, err = i.store().read(); err == nil {
		s.recovered, err = recovery{i}.recoverPending(ctx, s.state)
	}
	if err == nil {
		err = bundle.SweepStaging(i.paths())
	}
	if err != nil {
		unlock()
		return nil, err
	}
	return s, nil
}
