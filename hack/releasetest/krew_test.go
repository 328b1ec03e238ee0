package releasetest

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// krewPlugin is what checkKrew reads of a krew manifest.
type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		Homepage         string `json:"homepage"`
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			SHA256 string `json:"sha256"`
			Files  []struct {
				From string `json:"from"`
				To   string `json:"to"`
			} `json:"files"`
			Bin string `json:"bin"`
		} `json:"platforms"`
	} `json:"spec"`
}

// checkKrew: the krew manifest names the release's version and, for each
// of the plugin's archives (linux/amd64 and darwin/arm64 in the test
// release), its platform, URI and sha256; each archive holds the
// binary krew links, built for that platform (its ELF or Mach-O header
// says), and this machine's prints the release's version.
func checkKrew(t *testing.T, dist string) {
	data, err := os.ReadFile(filepath.Join(dist, "kubectl-shimkit.krew.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var p krewPlugin
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		t.Fatalf("kubectl-shimkit.krew.yaml: %v\n%s", err, data)
	}
	if p.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || p.Kind != "Plugin" || p.Metadata.Name != "shimkit" || p.Spec.Version != version || p.Spec.ShortDescription == "" || p.Spec.Description == "" {
		t.Fatalf("krew manifest: %+v", p)
	}
	var listed []string
	for _, pl := range p.Spec.Platforms {
		platform := pl.Selector.MatchLabels["os"] + "-" + pl.Selector.MatchLabels["arch"]
		listed = append(listed, platform)
		archive := "kubectl-shimkit-" + version + "-" + platform + ".tar.gz"
		raw, err := os.ReadFile(filepath.Join(dist, archive))
		if err != nil {
			t.Errorf("%s: %v", platform, err)
			continue
		}
		sum := sha256.Sum256(raw)
		if !strings.HasSuffix(pl.URI, "/"+version+"/"+archive) || pl.SHA256 != hex.EncodeToString(sum[:]) || pl.Bin != "kubectl-shimkit" {
			t.Errorf("%s: uri %s, sha256 %s (the archive's %x), bin %s", platform, pl.URI, pl.SHA256, sum, pl.Bin)
		}
		var installed []string
		for _, f := range pl.Files {
			installed = append(installed, f.From+"→"+f.To)
		}
		if want := []string{"kubectl-shimkit→.", "LICENSE→.", "NOTICE→."}; !slices.Equal(installed, want) {
			t.Errorf("%s: krew installs %q, want %q", platform, installed, want)
		}
		checkLegal(t, archive, map[string][]byte{"LICENSE": fileInTgz(t, filepath.Join(dist, archive), "LICENSE"), "NOTICE": fileInTgz(t, filepath.Join(dist, archive), "NOTICE")})
		bin := extract(t, filepath.Join(dist, archive), "kubectl-shimkit")
		checkExecutable(t, bin, pl.Selector.MatchLabels["os"], pl.Selector.MatchLabels["arch"])
		if platform == "linux-"+runtime.GOARCH {
			checkVersion(t, bin, "kubectl-shimkit")
		}
	}
	if want := pluginPlatforms(); !slices.Equal(listed, want) {
		t.Errorf("the krew manifest lists %q, want %q", listed, want)
	}
}

// checkExecutable checks that the file is an executable for the platform:
// an ELF of the architecture's machine for linux, a Mach-O of its CPU for
// darwin.
func checkExecutable(t *testing.T, file, goos, goarch string) {
	t.Helper()
	switch goos {
	case "linux":
		f, err := elf.Open(file)
		if err != nil {
			t.Errorf("%s (linux/%s): not an ELF file: %v", file, goarch, err)
			return
		}
		defer f.Close()
		if f.Machine != machines[goarch] || f.Type != elf.ET_EXEC {
			t.Errorf("%s: ELF %s %s, want an executable for %s", file, f.Type, f.Machine, machines[goarch])
		}
	case "darwin":
		f, err := macho.Open(file)
		if err != nil {
			t.Errorf("%s (darwin/%s): not a Mach-O file: %v", file, goarch, err)
			return
		}
		defer f.Close()
		if want := map[string]macho.Cpu{"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64}[goarch]; f.Cpu != want || f.Type != macho.TypeExec {
			t.Errorf("%s: Mach-O %s for %s, want an executable for %s", file, f.Type, f.Cpu, want)
		}
	default:
		t.Errorf("%s: a plugin for %s/%s, which the release does not build", file, goos, goarch)
	}
}

// extract writes the archive's file name to a temporary directory.
func extract(t *testing.T, archive, name string) string {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", archive, err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s: no %s (%v)", archive, name, err)
		}
		if h.Name != name || h.Mode&0o111 == 0 {
			continue
		}
		out := filepath.Join(t.TempDir(), name)
		w, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(w, tr); err != nil {
			t.Fatal(err)
		}
		w.Close()
		return out
	}
}
