package runtime

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/crioconfig"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/installer/layout"
	"github.com/shimkit/shimkit/internal/installer/systemd"
)

var _ Restarter = (*systemd.Restarter)(nil)

// Options are what an installer says of its node's runtime: each field
// overrides what the plan or detection would give.
type Options struct {
	Layout layout.Layout
	// Runtime, when set, is the node's runtime whatever the plan says.
	Runtime Runtime
	// Preset and Mode imply containerd.
	Preset *containerdconfig.Preset
	Mode   *containerdconfig.Mode
	// CRIO overrides the paths of a CRI-O node, as node paths.
	CRIO *crioconfig.Target
	// Restarter and Health default to systemd over D-Bus and CRI.
	Restarter Restarter
	Health    HealthChecker
	// Sandboxes defaults to CRI on the runtime's socket; with Runtime or
	// Health set, or Offline, there is none unless set.
	Sandboxes SandboxLister
	// Offline: changes need no restart and no check.
	Offline bool
	Log     *slog.Logger
}

// Node is the Runtime an operation uses, with what the steps need to know
// of it.
type Node struct {
	Runtime
	// Kind is plan.RuntimeContainerd or plan.RuntimeCRIO; for a Runtime
	// of the caller's, the plan's ("" when it names none).
	Kind string
	// Containerd is containerd's config (zero on another runtime); CRIO
	// CRI-O's files.
	Containerd containerdconfig.Target
	CRIO       crioconfig.Target
	// Restarts: changes need the runtime restarted and checked.
	Restarts bool
	// Sandboxes lists the pod sandboxes the runtime has (nil: it runs
	// none, as an offline root filesystem).
	Sandboxes SandboxLister
	// Host is the node's / as seen here, whose /proc a failed restart's
	// diagnosis reads for stuck shims; Unit tells the runtime unit's
	// state. Neither: a failed restart says only what failed.
	Host string
	Unit UnitStater
}

// For resolves the node's runtime for a plan's runtime (kind: "" detects
// it) and restart settings: Options.Runtime, else the kind the Options'
// Preset or Mode imply (containerd), else the plan's, else the detected
// one.
func For(kind string, r plan.Restart, o Options) (*Node, error) {
	root := o.Layout.Root()
	var err error
	switch {
	case o.Runtime != nil:
		return &Node{Runtime: o.Runtime, Kind: kind, Restarts: !o.Offline, Sandboxes: o.Sandboxes}, nil
	case kind != "":
	case o.Preset != nil, o.Mode != nil:
		kind = plan.RuntimeContainerd
	default:
		if kind, err = detect(o.Layout); err != nil {
			return nil, err
		}
	}
	timeout := time.Duration(r.Timeout)
	switch kind {
	case plan.RuntimeCRIO:
		return crioNode(o, timeout), nil
	case plan.RuntimeContainerd:
		return containerdNode(o, root, r, timeout)
	}
	return nil, fmt.Errorf("%w: runtime %q: want %q or %q", plan.ErrInvalid, kind, plan.RuntimeContainerd, plan.RuntimeCRIO)
}

func containerdNode(o Options, root string, r plan.Restart, timeout time.Duration) (*Node, error) {
	t, err := containerdTarget(root, o.Preset, o.Mode, r)
	if err != nil {
		return nil, err
	}
	c := &containerdRuntime{t: t, restarter: o.Restarter, health: o.Health, offline: o.Offline, log: o.Log}
	if c.restarter == nil {
		c.restarter = &systemd.Restarter{HostRoot: t.Root, Units: t.Preset.Units}
	}
	if c.health == nil {
		c.health = &CRIHealth{Socket: t.LocalPath(t.Preset.Socket), Timeout: timeout}
	}
	restarts := !o.Offline && (o.Restarter != nil || len(t.Preset.Units) > 0)
	n := &Node{Runtime: c, Kind: plan.RuntimeContainerd, Containerd: t, Restarts: restarts}
	n.Sandboxes = o.sandboxes(t.LocalPath(t.Preset.Socket))
	n.Host, n.Unit = o.diagnosis(root, c.restarter)
	return n, nil
}

func crioNode(o Options, timeout time.Duration) *Node {
	t := CRIOTarget(o.Layout, o.CRIO)
	c := &crioRuntime{t: t, restarter: o.Restarter, health: o.Health, log: o.Log}
	if c.restarter == nil {
		c.restarter = &systemd.Restarter{HostRoot: o.Layout.Root(), Units: []string{crioconfig.Unit}}
		if !o.Offline { // systemd stops the unit's whole cgroup
			c.cgroupV1 = hostCgroupV1
		}
	}
	if c.health == nil {
		c.health = &CRIHealth{Socket: o.Layout.Local(crioSocket), Timeout: timeout}
	}
	n := &Node{Runtime: c, Kind: plan.RuntimeCRIO, CRIO: t, Restarts: !o.Offline, Sandboxes: o.sandboxes(o.Layout.Local(crioSocket))}
	n.Host, n.Unit = o.diagnosis(o.Layout.Root(), c.restarter)
	return n
}

// diagnosis is what a failed restart's diagnosis looks at: the node's
// /proc under root, and the restarter's unit when it can tell its state;
// nothing offline, nor for a caller's own health check (a process
// supervisor's, a test's root without the node's processes).
func (o Options) diagnosis(root string, r Restarter) (string, UnitStater) {
	if o.Offline || o.Health != nil {
		return "", nil
	}
	u, _ := r.(UnitStater)
	return root, u
}

// sandboxes is the Options' SandboxLister, else CRI on socket when the
// health check is CRI's own too; none offline, nor for a caller's own
// health check (a process supervisor's, a test's) unless it gives one.
func (o Options) sandboxes(socket string) SandboxLister {
	switch {
	case o.Sandboxes != nil:
		return o.Sandboxes
	case o.Offline, o.Health != nil:
		return nil
	}
	return &CRISandboxes{Socket: socket}
}

// CRIOTarget is the CRI-O node's files: override (nil: crioconfig's
// defaults), under the host root unless it names its own.
func CRIOTarget(l layout.Layout, override *crioconfig.Target) crioconfig.Target {
	t := crioconfig.Target{}
	if override != nil {
		t = *override
	}
	if root := l.Root(); t.Root == "" && root != "/" {
		t.Root = root
	}
	return t
}

// Preset names the runtime's layout in the Shim's record: containerd's
// preset, or the runtime.
func (n *Node) Preset() string {
	if n.Kind == plan.RuntimeContainerd {
		return n.Containerd.Preset.Name
	}
	return n.Kind
}

// Recorded is the runtime as the state records it: "" for containerd,
// as records before CRI-O.
func (n *Node) Recorded() string {
	if n.Kind == plan.RuntimeContainerd {
		return ""
	}
	return n.Kind
}

// ConfigTargets are the node directories the runtime's config edits
// write: containerd's preset's config directory, or CRI-O's drop-in and
// state directories.
func (n *Node) ConfigTargets() []layout.Target {
	switch n.Kind {
	case plan.RuntimeContainerd:
		return []layout.Target{{What: "containerd's config directory", Path: filepath.Dir(n.Containerd.Preset.Config)}}
	case plan.RuntimeCRIO:
		return []layout.Target{{What: "CRI-O's drop-in directory", Path: crioDropInDir(n.CRIO)},
			{What: "shimkit's CRI-O state directory", Path: crioStateDir(n.CRIO)}}
	}
	return nil
}
