package testutil

import (
	"archive/tar"
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// GVisorBins returns the cached gVisor binaries built by hack/bins.sh from
// the `go` branch of gvisor.dev/gvisor: runsc and the containerd shim
// containerd-shim-runsc-v1 (found by containerd on its PATH for
// runtime_type "io.containerd.runsc.v1").
func GVisorBins(t testing.TB) (runsc, shim string) {
	t.Helper()
	dir := BinDir(t, "gvisor", "GVISOR_VERSION", "runsc", "containerd-shim-runsc-v1")
	return filepath.Join(dir, "runsc"), filepath.Join(dir, "containerd-shim-runsc-v1")
}

// GVisorShimWrapper returns a shell script to install as
// containerd-shim-runsc-v1 that runs the gVisor shim at shim on a machine
// without CAP_SYS_RESOURCE (this machine kind). gVisor's shim sets its
// daemon's oom_score_adj to -999 and, as root outside a user namespace, fails
// to start ("failed to set OOM Score on shim: write /proc/PID/oom_score_adj:
// permission denied") when it may not lower it. containerd's SetOOMScore,
// which it calls, ignores that error inside a user namespace: the script
// shows the shim's start process (and only it, by its pid) the file uidMap,
// holding GVisorUIDMap, as /proc/self/uid_map, in a mount namespace of its
// own that receives the host's mounts.
func GVisorShimWrapper(shim, uidMap string) []byte {
	return fmt.Appendf(nil, `#!/bin/sh
exec unshare --mount --propagation slave /bin/sh -c 'mount --bind "$0" /proc/$$/uid_map && exec "$@"' %q %q "$@"
`, uidMap, shim)
}

// GVisorUIDMap is a uid_map that reads as a user namespace's.
const GVisorUIDMap = "         0          0 4294967294\n"

// GVisorShimDir writes GVisorShimWrapper for shim into a fresh directory, to
// put on containerd's PATH.
func GVisorShimDir(t testing.TB, shim string) string {
	t.Helper()
	dir := t.TempDir()
	uidMap := filepath.Join(dir, "uid_map")
	if err := os.WriteFile(uidMap, []byte(GVisorUIDMap), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "containerd-shim-runsc-v1"), GVisorShimWrapper(shim, uidMap), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// RunscConfig is the shim's configuration file (the ConfigPath of a runsc
// handler's options).
type RunscConfig struct {
	// Runsc is the absolute path of runsc.
	Runsc string
	// Root is runsc's state directory (default /run/containerd/runsc).
	Root string
	// Flags are runsc's flags without dashes, such as "debug-log".
	Flags map[string]string
}

// RunscFlags are the runsc flags this machine kind needs: none. The
// defaults work on it: platform systrap (no KVM), network "sandbox" (a
// host-network pod gets a fresh network namespace with loopback only),
// cgroup v1 (runsc joins the pod's cgroup instead of CLONE_INTO_CGROUP),
// overlay2 root:self. The sidecars of gvisor-bin/ (gvisor_sentry, and the
// C prewarmer Go cannot build) are absent: runsc boots the sandbox itself
// and logs a warning. A fresh map is returned for the caller to add to.
func RunscFlags() map[string]string {
	return map[string]string{}
}

// TOML renders the configuration.
func (c RunscConfig) TOML() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "binary_name = %q\n", c.Runsc)
	if c.Root != "" {
		fmt.Fprintf(&b, "root = %q\n", c.Root)
	}
	b.WriteString("\n[runsc_config]\n")
	for _, k := range slices.Sorted(maps.Keys(c.Flags)) {
		fmt.Fprintf(&b, "  %q = %q\n", k, c.Flags[k])
	}
	return []byte(b.String())
}

// RunscHandler returns the config lines that register the runtime handler
// name served by containerd-shim-runsc-v1 with the shim configuration file
// configPath, for the config schema of build b.
func RunscHandler(b ContainerdBuild, name, configPath string) []byte {
	plugin := `plugins."io.containerd.cri.v1.runtime"`
	if b.Major == 1 {
		plugin = `plugins."io.containerd.grpc.v1.cri"`
	}
	return fmt.Appendf(nil, "\n[%s.containerd.runtimes.%s]\n  runtime_type = \"io.containerd.runsc.v1\"\n"+
		"\n[%s.containerd.runtimes.%s.options]\n  TypeUrl = \"io.containerd.runsc.v1.options\"\n  ConfigPath = %q\n",
		plugin, name, plugin, name, configPath)
}

// BusyboxImageRef is a small image holding Debian's static busybox
// (package busybox-static) as /bin/busybox, with /bin/sh linked to it.
const BusyboxImageRef = "shimkit.test/busybox:1"

// BusyboxImageTar packs /bin/busybox of this machine as an image tarball
// named BusyboxImageRef, into dir.
func BusyboxImageTar(t testing.TB, dir string) string {
	t.Helper()
	data, err := os.ReadFile("/bin/busybox")
	if err != nil {
		t.Fatalf("busybox: %v (apt-get install busybox-static)", err)
	}
	var layerTar bytes.Buffer
	tw := tar.NewWriter(&layerTar)
	for _, d := range []string{"bin", "dev", "etc", "proc", "sys", "tmp"} {
		if err := tw.WriteHeader(&tar.Header{Name: d + "/", Mode: 0o755, Typeflag: tar.TypeDir}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.WriteHeader(&tar.Header{Name: "bin/busybox", Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := tw.WriteHeader(&tar.Header{Name: "bin/sh", Linkname: "busybox", Mode: 0o777, Typeflag: tar.TypeSymlink}); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "busybox.tar")
	writeImage(t, layerTar.Bytes(), BusyboxImageRef, v1.Config{Entrypoint: []string{"/bin/busybox"}, Env: []string{"PATH=/bin"}}, out)
	return out
}

// ImportBusybox imports the busybox image with the ctr binary into the k8s.io
// namespace of the containerd listening on socket.
func ImportBusybox(t testing.TB, ctr, socket string) {
	t.Helper()
	ImportImage(t, ctr, socket, BusyboxImageTar(t, t.TempDir()))
}
