package containerdconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Preset describes where a Kubernetes distribution keeps containerd's
// configuration and what must be restarted for a change to take effect.
type Preset struct {
	// Name is containerd, k3s, rke2, microk8s or k0s.
	Name string
	// Config is the host path of the file shimkit edits or reads: the
	// containerd config, or for k3s and RKE2 the config they render.
	Config string
	// Units lists the systemd units that restart containerd, in the order
	// to try them; the first one loaded on the node is the one. Empty when
	// no restart is needed (k0s reloads its drop-ins).
	Units []string
	// Socket is the node path of containerd's CRI socket.
	Socket string

	// agentDir is the containerd directory of k3s and RKE2.
	agentDir string
	// generates are the binaries for which the distribution writes a
	// runtime table of its own when it finds them on its PATH.
	generates []string
	// dropInDir is where k0s reads drop-ins.
	dropInDir string
}

// Preset names.
const (
	PresetContainerd = "containerd"
	PresetK3s        = "k3s"
	PresetRKE2       = "rke2"
	PresetMicroK8s   = "microk8s"
	PresetK0s        = "k0s"
)

// ErrUnknownPreset: an override names no preset.
var ErrUnknownPreset = errors.New("unknown distribution preset")

// Presets returns every preset in detection order: the distributions with
// their own layout first, plain containerd (kind, minikube, AKS, EKS, GKE,
// kubeadm) last.
func Presets() []Preset {
	rancher := func(name string, units ...string) Preset {
		dir := "/var/lib/rancher/" + name + "/agent/etc/containerd"
		// RKE2 keeps k3s's socket path.
		return Preset{Name: name, Config: dir + "/config.toml", Units: units, Socket: "/run/k3s/containerd/containerd.sock", agentDir: dir, generates: rancherRuntimes}
	}
	return []Preset{
		rancher(PresetK3s, "k3s", "k3s-agent"),
		rancher(PresetRKE2, "rke2-server", "rke2-agent"),
		{
			Name: PresetMicroK8s, Config: "/var/snap/microk8s/current/args/containerd-template.toml",
			Units: []string{"snap.microk8s.daemon-containerd"}, Socket: "/var/snap/microk8s/common/run/containerd.sock",
		},
		{Name: PresetK0s, Config: "/etc/k0s/containerd.toml", Socket: "/run/k0s/containerd.sock", dropInDir: "/etc/k0s/containerd.d"},
		{Name: PresetContainerd, Config: "/etc/containerd/config.toml", Units: []string{"containerd"}, Socket: "/run/containerd/containerd.sock"},
	}
}

// rancherRuntimes are the binaries k3s (and RKE2, which runs k3s's agent)
// looks for on its PATH at every start, adding a runtime table for each one
// it finds to the config it renders (runtime names crun, nvidia,
// nvidia-experimental, nvidia-cdi, lunatic, slight, spin, wws, wasmedge,
// wasmer, wasmtime): k3s's pkg/agent/containerd/runtimes.go, with
// /usr/local/nvidia/toolkit and /opt/kwasm/bin put in front of its PATH.
var rancherRuntimes = []string{
	"crun", "nvidia-container-runtime", "nvidia-container-runtime-experimental", "nvidia-container-runtime.cdi",
	"containerd-shim-lunatic-v1", "containerd-shim-slight-v1", "containerd-shim-spin-v2", "containerd-shim-wws-v1",
	"containerd-shim-wasmedge-v1", "containerd-shim-wasmer-v1", "containerd-shim-wasmtime-v1",
}

// GeneratesRuntimeFor reports whether the distribution writes a runtime
// table of its own into the config it renders when it finds the binary
// (a base name) on its PATH: k3s and RKE2 do for the runtimes they
// auto-detect. A shim binary of such a name must not be put on their PATH
// by shimkit: the rendered config would define the runtime twice where
// shimkit's handler goes to a template.
func (p Preset) GeneratesRuntimeFor(binary string) bool {
	return slices.Contains(p.generates, binary)
}

// PresetNamed returns the preset with that name, for an explicit override.
func PresetNamed(name string) (Preset, error) {
	for _, p := range Presets() {
		if p.Name == name {
			return p, nil
		}
	}
	return Preset{}, fmt.Errorf("%w %q (want one of containerd, k3s, rke2, microk8s, k0s)", ErrUnknownPreset, name)
}

// Detect returns the preset of the node whose root filesystem is at root,
// checking the presets in the fixed order of Presets: the first whose
// directory exists wins, and plain containerd is the fallback.
func Detect(root string) (Preset, error) {
	for _, p := range Presets() {
		marker := p.agentDir
		switch p.Name {
		case PresetMicroK8s:
			marker = p.Config
		case PresetK0s:
			marker = p.dropInDir
		case PresetContainerd:
			return p, nil
		}
		if _, err := os.Stat(hostPath(root, marker)); err == nil {
			return p, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return Preset{}, fmt.Errorf("detect %s: %w", p.Name, err)
		}
	}
	return PresetNamed(PresetContainerd)
}

// hostPath maps a path on the node to this machine, where the node's root
// filesystem is mounted at root.
func hostPath(root, p string) string {
	if root == "" {
		root = "/"
	}
	return filepath.Join(root, filepath.FromSlash(p))
}

// importDir returns the directory of an import pattern that a drop-in named
// base would match, resolving a relative pattern against the config's
// directory (as containerd does), or "".
func importDir(configPath, pattern, base string) string {
	if !filepath.IsAbs(pattern) {
		pattern = filepath.Join(filepath.Dir(configPath), pattern)
	}
	dir := filepath.Dir(pattern)
	if strings.ContainsAny(dir, "*?[") {
		return ""
	}
	if ok, err := filepath.Match(filepath.Base(pattern), base); err != nil || !ok {
		return ""
	}
	return dir
}
