package runtime

import (
	"cmp"
	"errors"
	"strings"

	"github.com/shimkit/shimkit/containerdconfig"
	"github.com/shimkit/shimkit/crioconfig"
	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/installer/layout"
)

// ErrAmbiguousRuntime: the node has both containerd and CRI-O, and the plan
// does not say which one its handlers go to (NodePlan.Runtime).
var ErrAmbiguousRuntime = errors.New("the node runs containerd and CRI-O; the plan must name its runtime")

// containerdTarget resolves the node's containerd configuration: the
// installer's preset, else the plan's, else the detected one.
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

// detect tells a CRI-O node from a containerd one: a containerd
// distribution's layout (k3s, RKE2, MicroK8s, k0s) is containerd; else
// CRI-O's socket, config file or drop-in directory (crioconfig.Detect)
// is CRI-O, unless containerd's socket or config is there too: then the
// runtime whose socket is there, and with both sockets ErrAmbiguousRuntime.
// A node with neither is containerd's (the default before CRI-O).
func detect(l layout.Layout) (string, error) {
	root := l.Root()
	preset, err := containerdconfig.Detect(root)
	if err != nil {
		return "", err
	}
	if preset.Name != containerdconfig.PresetContainerd {
		return plan.RuntimeContainerd, nil
	}
	crioServes, err := crioSocketAt(l)
	if err != nil {
		return "", err
	}
	crio, _, err := crioconfig.Detect(root)
	if err != nil || !crio && !crioServes {
		return plan.RuntimeContainerd, err
	}
	hasSocket, err := l.Exists(preset.Socket)
	if err != nil {
		return "", err
	}
	hasConfig, err := l.Exists(preset.Config)
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
func crioSocketAt(l layout.Layout) (bool, error) {
	ok, err := l.Exists(crioSocket)
	if err == nil && !ok {
		ok, err = l.Exists(crioconfig.DefaultSocket)
	}
	return ok, err
}

// crioSocket is CRI-O's socket (crioconfig.DefaultSocket) through /run:
// /var/run is a symlink to /run on systemd nodes, often an absolute one,
// which a host root mounted in a pod (its /var and /run mounted apart)
// would resolve in the pod's own /run.
var crioSocket = strings.Replace(crioconfig.DefaultSocket, "/var/run/", "/run/", 1)

// crioDropInDir and crioStateDir are a CRI-O target's directories.
func crioDropInDir(t crioconfig.Target) string {
	return cmp.Or(t.DropInDir, crioconfig.DefaultDropInDir)
}

func crioStateDir(t crioconfig.Target) string {
	return cmp.Or(t.StateDir, crioconfig.DefaultStateDir)
}
