package testutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A k3s-style node runs containerd and the kubelet in one systemd unit,
// k3s-agent.service, as k3s and RKE2 do: restarting the runtime restarts
// the kubelet with it. What the stand-in reproduces of k3s:
//   - the unit's name, and its KillMode=process (containers' shims outlive
//     a restart of the unit; containerd and the kubelet do not);
//   - containerd's socket (/run/k3s/containerd/containerd.sock) and config
//     directory (/var/lib/rancher/k3s/agent/etc/containerd), by which
//     shimkit detects the k3s layout;
//   - config.toml rendered at every start of the unit: from
//     config-v3.toml.tmpl (containerd 2; config.toml.tmpl for 1.x) when
//     there is one, its line {{ template "base" . }} replaced by the base
//     config, else the base config itself.
//
// What it does not: k3s's own binary, its embedded flannel and the rest of
// its control plane, Go templates beyond the base line (the only one
// shimkit writes), and its containerd root (/var/lib/rancher/k3s/agent/
// containerd: the stand-in keeps /var/lib/containerd, on a real directory
// for the overlayfs snapshotter).

// K3s node paths.
const (
	K3sUnit      = "k3s-agent"
	K3sSocket    = "/run/k3s/containerd/containerd.sock"
	K3sConfigDir = "/var/lib/rancher/k3s/agent/etc/containerd"
	k3sBase      = "/usr/local/share/shimkit-test/k3s-containerd-base.toml"
	k3sAgent     = "/usr/local/bin/k3s-agent"
)

// K3sAgentEnv is the k3s-style agent's environment file: KUBELET_ARGS
// there starts the kubelet with containerd (absent: containerd alone).
const K3sAgentEnv = "/etc/default/k3s-agent"

// k3sAgentScript is the unit's main process: it renders containerd's
// config, starts containerd, waits for its socket, then the kubelet
// (KUBELET_ARGS of K3sAgentEnv, when set), started again a second after
// it exits (k3s's embedded kubelet lives as long as k3s), and stops both
// on SIGTERM.
const k3sAgentScript = `#!/bin/sh
set -eu
KUBELET_ARGS=
[ ! -f ` + K3sAgentEnv + ` ] || . ` + K3sAgentEnv + `
dir=` + K3sConfigDir + `
tmpl=
for t in config-v3.toml.tmpl config.toml.tmpl; do
	if [ -f "$dir/$t" ]; then tmpl=$dir/$t; break; fi
done
if [ -n "$tmpl" ]; then
	awk -v base=` + k3sBase + ` '/^[[:space:]]*\{\{[[:space:]]*template[[:space:]]+"base"[[:space:]]+\.[[:space:]]*\}\}[[:space:]]*$/ { while ((getline l < base) > 0) print l; close(base); next } { print }' "$tmpl" > "$dir/config.toml.new"
else
	cp ` + k3sBase + ` "$dir/config.toml.new"
fi
mv "$dir/config.toml.new" "$dir/config.toml"
mkdir -p /run/k3s/containerd
/usr/local/bin/containerd --config "$dir/config.toml" &
cpid=$!
kpid=
trap 'kill -TERM $cpid $kpid 2>/dev/null || true; wait' TERM INT
i=0
while [ ! -S ` + K3sSocket + ` ]; do
	i=$((i + 1))
	[ $i -lt 300 ] || { echo "containerd did not come up" >&2; exit 1; }
	kill -0 $cpid || exit 1
	sleep 0.1
done
if [ -n "$KUBELET_ARGS" ]; then
	(
		k=
		trap 'kill -TERM $k 2>/dev/null; wait; exit 0' TERM INT
		while :; do
			/usr/local/bin/kubelet $KUBELET_ARGS &
			k=$!
			wait $k || true
			echo "kubelet exited; starting it again" >&2
			sleep 1
		done
	) &
	kpid=$!
fi
wait $cpid
`

// k3sUnit is k3s-agent.service.
const k3sUnit = `[Unit]
Description=k3s-style agent: containerd and the kubelet
After=network.target

[Service]
ExecStart=` + k3sAgent + `
KillMode=process
Delegate=yes
Restart=always
RestartSec=1

[Install]
WantedBy=multi-user.target
`

// k3sBaseConfig is the base config the stand-in renders: the build's
// minimal config with k3s's socket and state, and the cluster's CNI.
func k3sBaseConfig(b ContainerdBuild) []byte {
	cfg := string(ClusterContainerdConfig(b))
	version, rest, _ := strings.Cut(cfg, "\n")
	return []byte(version + "\nstate = \"/run/k3s/containerd\"\n" + rest + "\n[grpc]\n  address = \"" + K3sSocket + "\"\n")
}

// useK3sLayout turns the node into a k3s-style one: containerd.service is
// masked, k3s-agent.service enabled (containerd alone until K3sAgentEnv
// gives the kubelet's arguments).
func (n *Node) useK3sLayout(t testing.TB, b ContainerdBuild) {
	t.Helper()
	files := map[string]struct {
		data []byte
		mode os.FileMode
	}{
		k3sAgent: {[]byte(k3sAgentScript), 0o755},
		k3sBase:  {k3sBaseConfig(b), 0o644},
		"/etc/systemd/system/" + K3sUnit + ".service": {[]byte(k3sUnit), 0o644},
	}
	for p, f := range files {
		local := n.Local(p)
		if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(local, f.data, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(n.Local(K3sConfigDir), 0o755); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"/etc/systemd/system/containerd.service":                              "/dev/null",
		"/etc/systemd/system/multi-user.target.wants/" + K3sUnit + ".service": "/etc/systemd/system/" + K3sUnit + ".service",
	}
	for p, target := range links {
		local := n.Local(p)
		if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
			t.Fatal(err)
		}
		_ = os.Remove(local)
		if err := os.Symlink(target, local); err != nil {
			t.Fatal(err)
		}
	}
	n.socket, n.unit = K3sSocket, K3sUnit
}
