package releasetest

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
			Bin    string `json:"bin"`
		} `json:"platforms"`
	} `json:"spec"`
}

// checkKrew: the krew manifest names the release's version and, for each
// of linux and darwin on amd64 and arm64, its archive by URI and sha256;
// each archive holds the binary krew links, and linux/amd64's prints the
// release's version.
func checkKrew(t *testing.T, dist string) {
	data, err := os.ReadFile(filepath.Join(dist, "kubectl-shimkit.krew.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var p krewPlugin
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		t.Fatalf("kubectl-shimkit.krew.yaml: %v\n%s", err, data)
	}
	if p.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || p.Kind != "Plugin" || p.Metadata.Name != "shimkit" || p.Spec.Version != version || p.Spec.ShortDescription == "" || p.Spec.Description == "" || len(p.Spec.Platforms) != 4 {
		t.Fatalf("krew manifest: %+v", p)
	}
	for _, pl := range p.Spec.Platforms {
		platform := pl.Selector.MatchLabels["os"] + "-" + pl.Selector.MatchLabels["arch"]
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
		bin := extract(t, filepath.Join(dist, archive), "kubectl-shimkit")
		if platform == "linux-amd64" {
			checkVersion(t, bin, "kubectl-shimkit")
		} else if out, err := exec.Command("file", bin).Output(); err == nil && !strings.Contains(string(out), map[string]string{"linux-arm64": "ARM aarch64", "darwin-amd64": "Mach-O 64-bit x86_64", "darwin-arm64": "Mach-O 64-bit arm64"}[platform]) {
			t.Errorf("%s: the archive's binary is %s", platform, out)
		}
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
