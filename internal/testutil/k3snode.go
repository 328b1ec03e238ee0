package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/shimkit/shimkit/internal/testutil/k3s"
)

// A k3s-style node runs containerd and the kubelet in one systemd unit, as
// k3s and RKE2 do: restarting the runtime restarts the kubelet with it.
// What the stand-in reproduces, checked against k3s's source
// (github.com/k3s-io/k3s: pkg/agent/containerd, pkg/agent/templates,
// install.sh) and RKE2's tarball install:
//   - the unit as install.sh writes it: k3s-agent.service in
//     /etc/systemd/system, Type=notify (ready once containerd's socket
//     answers), KillMode=process (containers' shims outlive a restart of
//     the unit; containerd and the kubelet do not), Delegate=yes,
//     Restart=always, RestartSec=5s, EnvironmentFile=-/etc/default/%N;
//   - for RKE2 (NodeOptions.RKE2), the tarball's two units in
//     /usr/local/lib/systemd/system, rke2-server.service and
//     rke2-agent.service, both loaded, the agent enabled and running, the
//     server (which fails at once on an agent node, in a restart loop, if
//     anyone starts it) not; they conflict with each other;
//   - containerd's socket (/run/k3s/containerd/containerd.sock) and config
//     directory (<data dir>/agent/etc/containerd), by which shimkit
//     detects the layout;
//   - config.toml rendered by a Go program (package k3s,
//     cmd/fake-k3s) at every start of the unit, as k3s renders it: with
//     text/template, the base registered as "base", from config-v3.toml.tmpl
//     or config.toml.tmpl when there is one; the base defines runc and one
//     runtime table per runtime k3s finds on its PATH (spin, wasmtime, crun,
//     nvidia, ...); for containerd 2 it imports config-v3.toml.d/*.toml
//     (current k3s, the default) or not (NodeOptions.K3sOld: k3s before PR
//     #13680); for containerd 1.7 it is the v2 base without imports.
//
// What it does not reproduce: k3s's own binary (its flags come on the
// command line, not /etc/rancher/k3s/config.yaml), its embedded flannel and
// the rest of its control plane, the template fields package k3s leaves
// out, containerd in k3s's data directory (it is /usr/local/bin/containerd),
// RKE2's ExecStopPost that kills a containerd or kubelet left in the unit's
// cgroup (the stand-in stops both itself)
// and containerd's root (/var/lib/containerd, on a real directory for the
// overlayfs snapshotter, not <data dir>/agent/containerd).

// K3s node paths.
const (
	K3sUnit       = "k3s-agent"
	K3sSocket     = k3s.Socket
	K3sConfigDir  = "/var/lib/rancher/k3s/agent/etc/containerd"
	RKE2Unit      = "rke2-agent"
	RKE2Server    = "rke2-server"
	RKE2ConfigDir = "/var/lib/rancher/rke2/agent/etc/containerd"
)

// K3sAgentEnv is the k3s agent's environment file: KUBELET_ARGS there
// starts the kubelet with containerd (absent: containerd alone).
const K3sAgentEnv = "/etc/default/k3s-agent"

// k3sUnitFile is a unit as k3s's install.sh and RKE2's tarball
// (bundle/lib/systemd/system) write it.
func k3sUnitFile(program, role, conflicts, flags string) string {
	c, env := "", "EnvironmentFile=-/etc/systemd/system/%n.env\n"
	if conflicts != "" {
		c = "Conflicts=" + conflicts + ".service\n"
		env = "EnvironmentFile=-/usr/local/lib/systemd/system/%N.env\n"
	}
	return `[Unit]
Description=Lightweight Kubernetes (stand-in)
Wants=network-online.target
After=network-online.target
` + c + `
[Install]
WantedBy=multi-user.target

[Service]
Type=notify
EnvironmentFile=-/etc/default/%N
EnvironmentFile=-/etc/sysconfig/%N
` + env + `KillMode=process
Delegate=yes
LimitNOFILE=1048576
TimeoutStartSec=0
Restart=always
RestartSec=5s
ExecStart=/usr/local/bin/` + program + ` ` + role + ` ` + flags + `
`
}

// k3sFiles are the files of the layout: the program and the units, their
// node paths mapped to content and mode, and the unit to enable.
func k3sFiles(t testing.TB, bin string, b ContainerdBuild, opts NodeOptions) (files map[string]nodeFile, enable, unit, configDir string) {
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	schema := 3
	if b.Major == 1 {
		schema = 2
	}
	program, dataDir := "k3s", "/var/lib/rancher/k3s"
	if opts.RKE2 {
		program, dataDir = "rke2", "/var/lib/rancher/rke2"
	}
	flags := fmt.Sprintf("--data-dir %s --schema %d --imports=%t --pause-image %s", dataDir, schema, !opts.K3sOld, PauseImageRef)
	files = map[string]nodeFile{"/usr/local/bin/" + program: {data, 0o755}}
	if opts.RKE2 {
		dir := "/usr/local/lib/systemd/system/"
		files[dir+RKE2Unit+".service"] = nodeFile{[]byte(k3sUnitFile(program, "agent", RKE2Server, flags)), 0o644}
		files[dir+RKE2Server+".service"] = nodeFile{[]byte(k3sUnitFile(program, "server", RKE2Unit, flags)), 0o644}
		return files, dir + RKE2Unit + ".service", RKE2Unit, RKE2ConfigDir
	}
	path := "/etc/systemd/system/" + K3sUnit + ".service"
	files[path] = nodeFile{[]byte(k3sUnitFile(program, "agent", "", flags)), 0o644}
	return files, path, K3sUnit, K3sConfigDir
}

// useK3sLayout turns the node into a k3s-style one (an RKE2 agent with
// opts.RKE2): containerd.service is masked, the agent's unit enabled
// (containerd alone until K3sAgentEnv gives the kubelet's arguments).
func (n *Node) useK3sLayout(t testing.TB, b ContainerdBuild, opts NodeOptions) {
	t.Helper()
	bin := GoBuild(t, "./internal/testutil/k3s/cmd/fake-k3s", filepath.Join(n.dir, "fake-k3s"))
	files, enable, unit, configDir := k3sFiles(t, bin, b, opts)
	n.writeFiles(t, files)
	if err := os.MkdirAll(n.Local(configDir), 0o755); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"/etc/systemd/system/containerd.service":                           "/dev/null",
		"/etc/systemd/system/multi-user.target.wants/" + unit + ".service": enable,
	}
	n.symlink(t, links)
	n.socket, n.unit = K3sSocket, unit
}
