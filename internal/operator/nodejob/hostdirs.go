package nodejob

import (
	"crypto/sha256"
	"encoding/hex"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// HostDir is a directory of the node that the installer sees at the same
// path under its host root.
type HostDir struct {
	Path     string
	ReadOnly bool
	// Create lets the kubelet create the directory when the node lacks
	// it; only for a directory no preset detection looks at.
	Create bool
}

// HostDirs are the node directories the installer reads and writes,
// instead of the node's whole /. Each one but /usr/local/bin must exist
// (hostPath type Directory): the kubelet never creates a directory that
// could change what containerdconfig.Detect finds, and the parents are
// mounted whole because detection looks for directories that only some
// nodes have (/var/lib/rancher/k3s, /var/snap/microk8s, /etc/k0s).
// Parents come before the directories mounted inside them.
func HostDirs() []HostDir {
	return []HostDir{
		// containerd's config, its imports and drop-ins (/etc/containerd,
		// k0s's /etc/k0s), the sandboxers' units (/etc/systemd/system).
		{Path: "/etc"},
		// The installer's state and download cache (/var/lib/shimkit),
		// k3s's and RKE2's containerd (/var/lib/rancher), MicroK8s's
		// (/var/snap/microk8s).
		{Path: "/var"},
		// Sockets: containerd's CRI (/run/containerd, /run/k3s, /run/k0s),
		// the system D-Bus and systemd's, the sandboxers' (/run/shimkit).
		{Path: "/run"},
		// The bundles, /opt/shimkit: its parent, so that the installer can
		// remove /opt/shimkit with the last Shim.
		{Path: "/opt"},
		// containerd's PATH, read only: no link may shadow a binary there.
		{Path: "/usr", ReadOnly: true},
		{Path: "/bin", ReadOnly: true},
		{Path: "/sbin", ReadOnly: true},
		// The one writable directory of that PATH: the links containerd
		// 1.6 needs for pod sandboxes.
		{Path: "/usr/local/bin", Create: true},
		// The node's processes, read only: the shims a restart would hang
		// on or end (a stopped one refuses the restart, ShimStuck), and
		// those still running from a bundle when the runtime does not
		// answer. The pod keeps its own PID namespace.
		{Path: "/proc", ReadOnly: true},
	}
}

// hostDirsFor are HostDirs with the Spec's own bundle root and link
// directory: the bundle root's parent (so that the installer can remove
// the bundle root with the last Shim) and the link directory, writable,
// each created when the node lacks it, unless a writable HostDir holds it
// already.
func hostDirsFor(s Spec) []HostDir {
	dirs := HostDirs()
	add := func(p string) {
		p = path.Clean(p)
		for _, d := range dirs {
			if !d.ReadOnly && (p == d.Path || strings.HasPrefix(p, d.Path+"/")) {
				return
			}
		}
		dirs = append(dirs, HostDir{Path: p, Create: true})
	}
	if s.BundleRoot != "" {
		add(path.Dir(path.Clean(s.BundleRoot)))
	}
	if s.LinkDir != "" && s.LinkDir != "-" {
		add(s.LinkDir)
	}
	return dirs
}

// volumeName names the volume of a node directory: "host" and its path
// with "-" for anything a volume name cannot have, shortened with a hash.
func volumeName(p string) string { return labelName("host", p) }

// labelName is prefix and p as a DNS label (a volume's name): "-" for
// anything a label cannot have, shortened with a hash of p.
func labelName(prefix, p string) string {
	name := prefix + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(p))
	if len(name) > 63 {
		sum := sha256.Sum256([]byte(p))
		name = strings.TrimRight(name[:52], "-") + "-" + hex.EncodeToString(sum[:5])
	}
	return name
}

// hostVolumes are the hostPath volumes of dirs and their mounts under
// hostRoot. HostToContainer propagation lets the installer see what the
// node mounts later (a containerd restart's new mounts under /run).
func hostVolumes(hostRoot string, dirs []HostDir) ([]corev1.Volume, []corev1.VolumeMount) {
	var volumes []corev1.Volume
	var mounts []corev1.VolumeMount
	for _, d := range dirs {
		name := volumeName(d.Path)
		typ := corev1.HostPathDirectory
		if d.Create {
			typ = corev1.HostPathDirectoryOrCreate
		}
		volumes = append(volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: d.Path, Type: ptr.To(typ)}}})
		mounts = append(mounts, corev1.VolumeMount{
			Name: name, MountPath: path.Join(hostRoot, d.Path), ReadOnly: d.ReadOnly,
			MountPropagation: ptr.To(corev1.MountPropagationHostToContainer),
		})
	}
	return volumes, mounts
}
