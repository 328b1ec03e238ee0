package installer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/crioconfig"
	"github.com/shimkit/shimkit/installer/plan"
)

// ErrAmbiguousRuntime: the node has both containerd and CRI-O, and the plan
// does not say which one its handlers go to (NodePlan.Runtime).
var ErrAmbiguousRuntime = errors.New("the node runs containerd and CRI-O; the plan must name its runtime")

// nodeRuntime is the Runtime an operation uses, with what the steps need
// to know of it.
type nodeRuntime struct {
	Runtime
	// kind is plan.RuntimeContainerd or plan.RuntimeCRIO; "" for an
	// Installer.Runtime of the caller's.
	kind string
	// target is containerd's config (zero on another runtime); crio CRI-O's.
	target containerdconfig.Target
	crio   crioconfig.Target
	// restarts: changes need the runtime restarted and checked.
	restarts bool
}

// preset names the runtime's layout in the Shim's record: containerd's
// preset, or the runtime.
func (n *nodeRuntime) preset() string {
	if n.kind == plan.RuntimeContainerd {
		return n.target.Preset.Name
	}
	return n.kind
}

// runtimeFor resolves the node's runtime for a plan's runtime (kind: ""
// detects it) and restart settings: Installer.Runtime, else the kind the
// Installer's Preset or Mode imply (containerd), else the plan's, else
// the detected one.
func (i *Installer) runtimeFor(kind string, r plan.Restart) (*nodeRuntime, error) {
	root := i.paths().root()
	var err error
	switch {
	case i.Runtime != nil:
		return &nodeRuntime{Runtime: i.Runtime, kind: kind, restarts: !i.Offline}, nil
	case kind != "":
	case i.Preset != nil, i.Mode != nil:
		kind = plan.RuntimeContainerd
	default:
		if kind, err = detectRuntime(root); err != nil {
			return nil, err
		}
	}
	timeout := time.Duration(r.Timeout)
	switch kind {
	case plan.RuntimeCRIO:
		return i.crioRuntime(root, timeout), nil
	case plan.RuntimeContainerd:
		return i.containerdRuntime(root, r, timeout)
	}
	return nil, fmt.Errorf("%w: runtime %q: want %q or %q", plan.ErrInvalid, kind, plan.RuntimeContainerd, plan.RuntimeCRIO)
}

func (i *Installer) containerdRuntime(root string, r plan.Restart, timeout time.Duration) (*nodeRuntime, error) {
	t, err := containerdTarget(root, i.Preset, i.Mode, r)
	if err != nil {
		return nil, err
	}
	c := &containerdRuntime{t: t, restarter: i.Restarter, health: i.Health, offline: i.Offline, log: i.log()}
	if c.restarter == nil {
		c.restarter = &SystemdRestarter{HostRoot: t.Root, Units: t.Preset.Units}
	}
	if c.health == nil {
		c.health = &CRIHealth{Socket: t.LocalPath(t.Preset.Socket), Timeout: timeout}
	}
	restarts := !i.Offline && (i.Restarter != nil || len(t.Preset.Units) > 0)
	return &nodeRuntime{Runtime: c, kind: plan.RuntimeContainerd, target: t, restarts: restarts}, nil
}

// crioTarget is the CRI-O node's files: Installer.CRIO, under the host
// root unless it names its own.
func crioTarget(i *Installer) crioconfig.Target {
	t := crioconfig.Target{}
	if i.CRIO != nil {
		t = *i.CRIO
	}
	if root := i.paths().root(); t.Root == "" && root != "/" {
		t.Root = root
	}
	return t
}

func (i *Installer) crioRuntime(root string, timeout time.Duration) *nodeRuntime {
	t := crioTarget(i)
	c := &crioRuntime{t: t, restarter: i.Restarter, health: i.Health, log: i.log()}
	if c.restarter == nil {
		c.restarter = &SystemdRestarter{HostRoot: root, Units: []string{crioconfig.Unit}}
		if !i.Offline { // systemd stops the unit's whole cgroup
			c.cgroupV1 = hostCgroupV1
		}
	}
	if c.health == nil {
		c.health = &CRIHealth{Socket: i.paths().local(crioSocket), Timeout: timeout}
	}
	return &nodeRuntime{Runtime: c, kind: plan.RuntimeCRIO, crio: t, restarts: !i.Offline}
}

// containerdTarget resolves the node's containerd configuration: the
// Installer's preset, else the plan's, else the detected one.
func containerdTarget(root string, preset *containerdconfig.Preset, mode *containerdconfig.Mode, r plan.Restart) (containerdconfig.Target, error) {
	t := containerdconfig.Target{Root: root}
	switch {
	case mode != nil:
		t.Mode = *mode
	case r.ConfigMode == "file":
		t.Mode = containerdconfig.ModeFile
	case r.ConfigMode == "drop-in":
		t.Mode = containerdconfig.ModeDropIn
	}
	var err error
	switch {
	case preset != nil:
		t.Preset = *preset
	case r.Preset != "":
		t.Preset, err = containerdconfig.PresetNamed(r.Preset)
	default:
		t.Preset, err = containerdconfig.Detect(t.Root)
	}
	return t, err
}

// detectRuntime tells a CRI-O node from a containerd one: a containerd
// distribution's layout (k3s, RKE2, MicroK8s, k0s) is containerd; else
// CRI-O's socket, config file or drop-in directory (crioconfig.Detect)
// is CRI-O, unless containerd's socket or config is there too: then the
// runtime whose socket is there, and with both sockets ErrAmbiguousRuntime.
// A node with neither is containerd's (the default before CRI-O).
func detectRuntime(root string) (string, error) {
	preset, err := containerdconfig.Detect(root)
	if err != nil {
		return "", err
	}
	if preset.Name != containerdconfig.PresetContainerd {
		return plan.RuntimeContainerd, nil
	}
	crioServes, err := crioSocketAt(root)
	if err != nil {
		return "", err
	}
	crio, _, err := crioconfig.Detect(root)
	if err != nil || !crio && !crioServes {
		return plan.RuntimeContainerd, err
	}
	hasSocket, err := exists(root, preset.Socket)
	if err != nil {
		return "", err
	}
	hasConfig, err := exists(root, preset.Config)
	switch {
	case err != nil:
		return "", err
	case !hasSocket && !hasConfig, crioServes && !hasSocket:
		return plan.RuntimeCRIO, nil
	case crioServes:
		return "", ErrAmbiguousRuntime
	}
	return plan.RuntimeContainerd, nil
}

// crioSocketAt reports whether CRI-O's socket is on the node, through
// /run or /var/run.
func crioSocketAt(root string) (bool, error) {
	ok, err := exists(root, crioSocket)
	if err == nil && !ok {
		ok, err = exists(root, crioconfig.DefaultSocket)
	}
	return ok, err
}

// crioSocket is CRI-O's socket (crioconfig.DefaultSocket) through /run:
// /var/run is a symlink to /run on systemd nodes, often an absolute one,
// which a host root mounted in a pod (its /var and /run mounted apart)
// would resolve in the pod's own /run.
var crioSocket = strings.Replace(crioconfig.DefaultSocket, "/var/run/", "/run/", 1)

// exists reports whether a node path exists under root.
func exists(root, nodePath string) (bool, error) {
	_, err := os.Stat(layout{host: root}.local(nodePath))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}
