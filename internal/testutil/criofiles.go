package testutil

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func (c *CRIO) path(p string) string { return filepath.Join(c.Dir, p) }

// writeFiles writes crio.conf (every path of CRI-O's under Dir), an empty
// drop-in directory, policy.json, registries.conf, storage.conf and a
// loopback CNI network.
func (c *CRIO) writeFiles() error {
	files := map[string]string{
		"policy.json":              `{"default": [{"type": "insecureAcceptAnything"}]}` + "\n",
		"registries.conf":          "unqualified-search-registries = []\n",
		"storage.conf":             "[storage]\ndriver = \"vfs\"\nrunroot = \"" + c.path("run/storage") + "\"\ngraphroot = \"" + c.path("lib/storage") + "\"\n",
		"cni/10-loopback.conflist": `{"cniVersion": "1.0.0", "name": "shimkit-loopback", "plugins": [{"type": "loopback"}]}` + "\n",
		"etc/crio/crio.conf":       c.configText(),
	}
	for name, data := range files {
		p := c.path(name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			return err
		}
	}
	return os.MkdirAll(c.DropInDir, 0o755)
}

func (c *CRIO) configText() string {
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	var b strings.Builder
	fmt.Fprintf(&b, "# The test's crio.conf (internal/testutil/crio.go): every path under %s.\n", c.Dir)
	fmt.Fprintf(&b, "[crio]\nroot = %s\nrunroot = %s\nstorage_driver = \"vfs\"\nlog_dir = %s\n", q(c.path("lib/storage")), q(c.path("run/storage")), q(c.path("log/pods")))
	fmt.Fprintf(&b, "version_file = %s\nversion_file_persist = %s\nclean_shutdown_file = %s\n", q(c.path("run/version")), q(c.path("lib/version")), q(c.path("lib/clean.shutdown")))
	fmt.Fprintf(&b, "\n[crio.api]\nlisten = %s\nstream_address = \"127.0.0.1\"\nstream_port = \"0\"\n", q(c.Socket))
	fmt.Fprintf(&b, "\n[crio.runtime]\ncgroup_manager = \"cgroupfs\"\nconmon = \"/usr/bin/conmon\"\nconmon_cgroup = \"pod\"\n")
	fmt.Fprintf(&b, "default_runtime = \"crun\"\npinns_path = %s\nnamespaces_dir = %s\n", q(filepath.Join(c.BinDir, "pinns")), q(c.path("run/ns")))
	fmt.Fprintf(&b, "container_exits_dir = %s\ncontainer_attach_socket_dir = %s\n", q(c.path("run/exits")), q(c.path("run/attach")))
	fmt.Fprintf(&b, "hooks_dir = []\ncdi_spec_dirs = []\ndecryption_keys_path = %s\nirqbalance_config_file = \"\"\nirqbalance_config_restore_file = \"disable\"\n", q(c.path("keys")))
	fmt.Fprintf(&b, "\n[crio.runtime.runtimes.crun]\nruntime_path = \"/usr/bin/crun\"\nruntime_root = %s\n", q(c.path("run/crun")))
	fmt.Fprintf(&b, "\n[crio.image]\nsignature_policy = %s\n", q(c.path("policy.json")))
	if c.PauseImage != "" {
		fmt.Fprintf(&b, "pause_image = %s\npause_command = \"/pause\"\n", q(c.PauseImage))
	}
	fmt.Fprintf(&b, "\n[crio.network]\nnetwork_dir = %s\nplugin_dirs = [\"/usr/lib/cni\"]\n", q(c.path("cni")))
	fmt.Fprintf(&b, "\n[crio.metrics]\nenable_metrics = false\n\n[crio.nri]\nenable_nri = false\n")
	return b.String()
}

// PushPauseImage pushes the pause binary of internal/testutil/pause as
// the image pause:1 of the registry (at /pause, executable) and returns
// its reference, for WithPauseImage. CRI-O pulls its pause image like any
// other (loopback registries are insecure to it: internal/storage adds
// 127.0.0.0/8), so a test's CRI-O pulls from the stand-in.
func PushPauseImage(t testing.TB, r *Registry) string {
	t.Helper()
	dir := t.TempDir()
	bin := GoBuild(t, "./internal/testutil/pause", filepath.Join(dir, "pause"), "-trimpath", "-ldflags", "-s -w")
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	if err := tw.WriteHeader(&tar.Header{Name: "pause", Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	_, _ = tw.Write(data)
	_ = tw.Close()
	img := oneLayerImage(t, layer.Bytes(), v1.Config{Entrypoint: []string{"/pause"}})
	r.pushImage(t, "pause", "1", img)
	return r.Host + "/pause:1"
}

// pushArchives pushes each image archive (a `docker save` tarball, as
// internal/imagebuild writes) to r under its name's repository and tag,
// and returns the registry hosts its names had (for a prefix rewrite).
func pushArchives(t testing.TB, r *Registry, archives []string) []string {
	t.Helper()
	var hosts []string
	for _, path := range archives {
		m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(path) })
		if err != nil {
			t.Fatalf("image archive %s: %v", path, err)
		}
		for _, ref := range m[0].RepoTags {
			tag, err := name.NewTag(ref)
			if err != nil {
				t.Fatalf("image archive %s: %v", path, err)
			}
			img, err := tarball.ImageFromPath(path, &tag)
			if err != nil {
				t.Fatalf("image archive %s: %v", path, err)
			}
			r.pushImage(t, tag.RepositoryStr(), tag.TagStr(), img)
			if h := tag.RegistryStr(); !slices.Contains(hosts, h) {
				hosts = append(hosts, h)
			}
		}
	}
	return hosts
}
