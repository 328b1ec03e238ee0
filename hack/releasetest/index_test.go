package releasetest

import (
	"archive/tar"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// machines are the ELF machines of the images' architectures.
var machines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// checkIndex reads the OCI image layout archive of an image: one image
// index, tagged with the release's version and named ref, holding a
// linux/amd64 and a linux/arm64 image whose only layer has the binary for
// that architecture; the one of this machine runs and says its version.
// It returns the index's digest.
func checkIndex(t *testing.T, archive, ref, binary string) string {
	dir := t.TempDir()
	untar(t, archive, dir)
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatalf("%s: not an OCI image layout: %v", archive, err)
	}
	im, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 {
		t.Fatalf("%s: index.json lists %d manifests, want one image index", archive, len(im.Manifests))
	}
	d := im.Manifests[0]
	if !d.MediaType.IsIndex() || d.Annotations["org.opencontainers.image.ref.name"] != version || d.Annotations["io.containerd.image.name"] != ref {
		t.Errorf("%s: index.json: %s, annotations %v; want an image index tagged %s, named %s", archive, d.MediaType, d.Annotations, version, ref)
	}
	idx, err := top.ImageIndex(d.Digest)
	if err != nil {
		t.Fatal(err)
	}
	members, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, m := range members.Manifests {
		platforms = append(platforms, m.Platform.String())
		img, err := idx.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		checkMember(t, img, ref+" "+m.Platform.String(), binary, m.Platform.Architecture)
	}
	if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("%s: platforms %q, want linux/amd64 and linux/arm64", archive, platforms)
	}
	return d.Digest.String()
}

// checkMember checks one platform's image: its config's platform and
// entrypoint, its license (label and /licenses), and its binary's
// architecture (and version, when it runs here).
func checkMember(t *testing.T, img v1.Image, what, binary, arch string) {
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != arch || !slices.Equal(cf.Config.Entrypoint, []string{"/" + binary}) {
		t.Errorf("%s: config says %s/%s, entrypoint %q; want linux/%s, /%s", what, cf.OS, cf.Architecture, cf.Config.Entrypoint, arch, binary)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%s: layers %d, %v; want one", what, len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := filesInTar(t, rc, binary, "licenses/LICENSE", "licenses/NOTICE")
	checkLegal(t, what, legalOf(files))
	if got := cf.Config.Labels["org.opencontainers.image.licenses"]; got != license {
		t.Errorf("%s: label org.opencontainers.image.licenses %q, want %s", what, got, license)
	}
	if files[binary] == nil {
		t.Fatalf("%s: no /%s in the layer", what, binary)
	}
	exe := filepath.Join(t.TempDir(), binary)
	if err := os.WriteFile(exe, files[binary], 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatalf("%s: /%s: %v", what, binary, err)
	}
	machine := f.Machine
	f.Close()
	if machine != machines[arch] {
		t.Errorf("%s: /%s is for %s, want %s", what, binary, machine, machines[arch])
	}
	if arch == runtime.GOARCH {
		checkVersion(t, exe, binary)
	}
}

// untar extracts a tar archive of regular files and directories into dir.
func untar(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", archive, err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			t.Fatalf("%s: %s leaves the archive", archive, h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeReg:
			var data []byte
			if data, err = io.ReadAll(tr); err == nil {
				err = os.WriteFile(p, data, 0o644)
			}
		default:
			t.Fatalf("%s: %s: type %c", archive, h.Name, h.Typeflag)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// helm runs helm and returns its output.
func helm(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(helmBin(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
