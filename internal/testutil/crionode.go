package testutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A CRI-O node (NodeOptions.CRIO) runs crio.service under the node's
// systemd in place of containerd. What the stand-in reproduces:
//   - CRI-O laid out as its static release bundle installs it: crio and
//     pinns in /usr/local/bin (the build of hack/bins.sh: CRI-O
//     $CRIO_VERSION from the module proxy), crio.service in
//     /usr/local/lib/systemd/system, enabled, with its cri-o.service
//     alias, the unit's text as CRI-O's contrib/systemd/crio.service has
//     it (Type=notify, Restart=on-failure, RestartSec=10,
//     TimeoutStartSec=0, WatchdogSec=60s, OOMScoreAdjust=-999), and the
//     configuration as a drop-in of the vendor's,
//     /etc/crio/crio.conf.d/10-crio.conf, with no /etc/crio/crio.conf;
//   - Debian's conmon and crun (hack/node-crio-layer.sh, a layer over the
//     node root filesystem) and runc; a bridge CNI network of Debian's
//     plugins, as the cluster's containerd nodes have;
//   - CRI-O's default cgroup manager, systemd (the kubelet's cgroup driver
//     too on a cluster node), each conmon in a scope of system.slice
//     (conmon_cgroup), so that a restart of crio.service leaves the pods,
//     the installer's own included, running. With cgroupfs on this
//     machine's cgroup v1, each conmon stays in crio.service's name=systemd
//     cgroup and the restart stops it with its container;
//   - CRI-O's socket where it listens by default, /var/run/crio/crio.sock
//     (/run on the node), and its storage in /var/lib/containers/storage.
//
// What it does not reproduce: CRI-O's own conmon, crun and runc (its
// bundle ships crio-conmon, crio-crun and crio-runc; here Debian's, and
// runc is the default runtime, since Debian's crun 1.8.1 refuses CRI-O
// v1.34's runtime spec 1.2.1: "unknown version specified"); seccomp,
// SELinux and AppArmor (CRI-O is built without them); the overlay storage
// driver (vfs: the node's root is itself an overlay); pulls from
// anywhere but a registry of the test (a cluster node pulls its pause
// image from one on the cluster's network, JoinOptions.CRIO); the cgroup
// controllers this machine's kernel has but does not mount (hugetlb,
// net_cls, net_prio, perf_event: the node's /proc/cgroups lists only the
// mounted ones, and it has no huge page sizes, see nodeboot.sh);
// CAP_SYS_RESOURCE, which this machine lacks (its
// runc takes a negative oom_score_adj and the capability out of each
// container, crioRuncClamped; systemd cannot set the unit's
// OOMScoreAdjust either and goes on without it);
// and a node without containerd: Debian's containerd package stays
// installed, its unit masked and /etc/containerd gone.

// CRI-O node paths.
const (
	CRIOUnit        = "crio"
	CRIOSocket      = "/run/crio/crio.sock"
	CRIOVendorConf  = "/etc/crio/crio.conf.d/10-crio.conf"
	crioUnitPath    = "/usr/local/lib/systemd/system/crio.service"
	crioPolicyPath  = "/etc/crio/policy.json"
	crioNodeCNIPath = "/etc/cni/net.d/10-shimkit.conflist"
)

// crioNodeLayer returns the cached CRI-O layer (hack/node-crio-layer.sh),
// failing the test when it has not been built (make bins).
func crioNodeLayer(t testing.TB) string {
	t.Helper()
	rv, err := Version("NODE_ROOTFS_VERSION")
	if err != nil {
		t.Fatal(err)
	}
	lv, err := Version("NODE_CRIO_LAYER_VERSION")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(CacheDir(), "node-rootfs-"+rv, "crio-"+lv, "layer")
	if _, err := os.Stat(filepath.Join(dir, "usr/bin/conmon")); err != nil {
		t.Fatalf("CRI-O node layer: %v (build it with `make bins`)", err)
	}
	return dir
}

// crioUnitFile is CRI-O's crio.service (contrib/systemd/crio.service of
// CRI-O v1.34) as its bundle installs it.
const crioUnitFile = `[Unit]
Description=Container Runtime Interface for OCI (CRI-O)
Documentation=https://github.com/cri-o/cri-o
Wants=network-online.target
Before=kubelet.service
After=network-online.target

[Service]
Type=notify
EnvironmentFile=-/etc/sysconfig/crio
Environment=GOTRACEBACK=crash
ExecStart=/usr/local/bin/crio \
          $CRIO_CONFIG_OPTIONS \
          $CRIO_RUNTIME_OPTIONS \
          $CRIO_STORAGE_OPTIONS \
          $CRIO_NETWORK_OPTIONS \
          $CRIO_METRICS_OPTIONS
ExecReload=/bin/kill -s HUP $MAINPID
TasksMax=infinity
LimitNPROC=1048576
LimitCORE=infinity
OOMScoreAdjust=-999
TimeoutStartSec=0
Restart=on-failure
RestartSec=10
WatchdogSec=60s

[Install]
WantedBy=multi-user.target
Alias=cri-o.service
`

// crioRuncClamped is the CRI-O node's runc, its default runtime and the
// one a shim v2 finds on crio.service's PATH: Debian's runc through
// RuncClamped. Not on a real CRI-O node.
const crioRuncClamped = "/usr/local/bin/runc"

// crioNodeConfig is the vendor's drop-in of the CRI-O node.
const crioNodeConfig = `# The CRI-O node's configuration (internal/testutil/crionode.go), a drop-in
# where CRI-O's release bundle puts its own; there is no crio.conf.
[crio]
storage_driver = "vfs"

[crio.runtime]
cgroup_manager = "systemd"
conmon = "/usr/bin/conmon"
conmon_cgroup = "system.slice"
default_runtime = "runc"

[crio.runtime.runtimes.runc]
runtime_path = "/usr/local/bin/runc"
runtime_root = "/run/runc"

[crio.image]
signature_policy = "` + crioPolicyPath + `"
pause_image = "` + PauseImageRef + `"
pause_command = "/pause"

[crio.network]
network_dir = "/etc/cni/net.d"
plugin_dirs = ["/usr/lib/cni"]
`

// useCRIO turns the node into a CRI-O node (see above): called on the
// mounted root before the test's own files are written.
func (n *Node) useCRIO(t testing.TB) {
	t.Helper()
	bin := CRIOBinDir(t)
	files := map[string]nodeFile{
		crioUnitPath:    {[]byte(crioUnitFile), 0o644},
		CRIOVendorConf:  {[]byte(crioNodeConfig), 0o644},
		crioPolicyPath:  {[]byte(`{"default": [{"type": "insecureAcceptAnything"}]}` + "\n"), 0o644},
		crioNodeCNIPath: {[]byte(cniConfig), 0o644},
		crioRuncClamped: {RuncClamped("/usr/bin/runc"), 0o755},
	}
	for _, b := range []string{"crio", "pinns"} {
		data, err := os.ReadFile(filepath.Join(bin, b))
		if err != nil {
			t.Fatal(err)
		}
		files["/usr/local/bin/"+b] = nodeFile{data, 0o755}
	}
	n.writeFiles(t, files)
	if err := os.RemoveAll(n.Local("/etc/containerd")); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"/etc/systemd/system/containerd.service":                   "/dev/null",
		"/etc/systemd/system/multi-user.target.wants/crio.service": crioUnitPath,
		"/etc/systemd/system/cri-o.service":                        crioUnitPath,
	}
	n.symlink(t, links)
	n.socket, n.unit = CRIOSocket, CRIOUnit
}

// crioNodeFiles makes a cluster node's files those of a CRI-O node: the
// kubelet on CRI-O's socket, after crio.service, and CRI-O's pause image
// pushed to a registry of the test on the cluster's network, which the
// node's registries.conf marks insecure (plain HTTP), in a drop-in of the
// cluster's beside the vendor's.
func (c *Cluster) crioNodeFiles(t testing.TB, files map[string][]byte, opts JoinOptions) {
	t.Helper()
	if opts.Containerd != nil || opts.K3s {
		t.Fatal("a CRI-O cluster node takes no Containerd or K3s")
	}
	reg := c.StartRegistry(t, "", "")
	pause := PushPauseImage(t, reg)
	registries := "[[registry]]\nlocation = \"" + reg.Host + "\"\ninsecure = true\n"
	// A node image's pre-pulled images, as CRI-O gets them: from the
	// test's registry, their names' registry rewritten to it
	// (registries.conf's prefix), so that a Pod names them as on the
	// containerd nodes.
	for _, host := range pushArchives(t, reg, opts.Images) {
		registries += "\n[[registry]]\nprefix = \"" + host + "\"\nlocation = \"" + reg.Host + "\"\ninsecure = true\n"
	}
	files["/etc/kubernetes/kubelet.yaml"] = []byte(strings.NewReplacer("unix:///run/containerd/containerd.sock", "unix://"+CRIOSocket, "cgroupDriver: cgroupfs", "cgroupDriver: systemd").Replace(kubeletConfig))
	files["/etc/systemd/system/kubelet.service"] = []byte(strings.ReplaceAll(string(files["/etc/systemd/system/kubelet.service"]), "containerd.service", "crio.service"))
	delete(files, "/etc/containerd/config.toml")
	files[CRIOClusterConf] = []byte("# The cluster's CRI-O settings (internal/testutil/crionode.go).\n[crio.image]\npause_image = \"" + pause + "\"\n")
	files["/etc/containers/registries.conf"] = []byte(registries)
}

// CRIOClusterConf is a CRI-O cluster node's drop-in of the cluster's
// settings; CRIOPauseImage reads the pause image from it.
const CRIOClusterConf = "/etc/crio/crio.conf.d/20-cluster.conf"

// CRIOPauseImage is the pause image a CRI-O cluster node pulls (also an
// image a canary pod can run: "/pause exit 0").
func CRIOPauseImage(t testing.TB, n *Node) string {
	t.Helper()
	data, err := os.ReadFile(n.Local(CRIOClusterConf))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(data), "pause_image = \"")
	ref, _, ok2 := strings.Cut(after, "\"")
	if !ok || !ok2 {
		t.Fatalf("no pause_image in %s", CRIOClusterConf)
	}
	return ref
}

// crioQuirks is NODE_CRIO of nodeboot.sh: "1" on a CRI-O node, which
// must see only the cgroup controllers this machine mounts, and no huge
// page sizes (see nodeboot.sh).
func crioQuirks(opts NodeOptions) string {
	if opts.CRIO {
		return "1"
	}
	return ""
}
