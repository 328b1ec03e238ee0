// Package releasetest checks a release as make release writes it: every
// file the release lists, the checksums, the chart's version, appVersion
// and default image tags, the images' platforms, tags and their binaries'
// --version, the SBOMs and the krew manifest. TestCrossRelease reads the
// test release of every platform (make test-release; make test builds it
// beside the other tests and runs TestCrossRelease after them); TestPublish
// builds one of this machine's platform, publishes it with make publish
// and reads it back. It needs make, helm (bin/helm, make tools; or $HELM)
// and cyclonedx-gomod (bin/cyclonedx-gomod), which make release builds
// when they are missing; with -short it is skipped (make test-unit).
package releasetest

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/shimkit/shimkit/internal/testutil"
)

// The test release (make test-release: the Makefile's
// TEST_RELEASE_VERSION, its IMAGE_PREFIX and TEST_RELEASE_PLUGIN_PLATFORMS).
const (
	version      = "v0.0.0-test"
	chartVersion = "0.0.0-test" // SemVer 2, as Helm wants it: the version without its v
	prefix       = "registry.example/shimkit/"
)

// pluginPlatforms are the platforms of the test release's plugin archives.
func pluginPlatforms() []string { return []string{"linux-amd64", "darwin-arm64"} }

// repoRoot is the repository's root.
func repoRoot() string { return testutil.RepoRoot() }

// Bounds of the builds the tests wait for: a cold cross build of the test
// release took 627 s on a fresh 2-core machine, and TestPublish, whose
// release of this machine's platform only links, 107–138 s beside the
// other tests.
const (
	crossBuildLimit  = 25 * time.Minute
	nativeBuildLimit = 6 * time.Minute
)

// testRelease returns the release make test built before the tests
// (SHIMKIT_TEST_RELEASE names its directory); run alone, the tests build
// it with make test-release, which reuses one of the same tree.
func testRelease(t *testing.T) string {
	t.Helper()
	if dist := os.Getenv("SHIMKIT_TEST_RELEASE"); dist != "" {
		return dist
	}
	if out, err := makeTarget(t, crossBuildLimit, "test-release"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return filepath.Join(repoRoot(), "bin", "test-release")
}

// nativeRelease runs make release for this machine's platform alone into a
// new directory and returns it: its packages are compiled already (by
// make test-release), so it links and packages.
func nativeRelease(t *testing.T, vars ...string) string {
	t.Helper()
	dist := t.TempDir()
	native := "linux/" + runtime.GOARCH
	vars = append([]string{"VERSION=" + version, "DIST=" + dist, "IMAGE_PLATFORMS=" + native, "PLUGIN_PLATFORMS=" + native}, vars...)
	if out, err := makeTarget(t, nativeBuildLimit, "release", vars...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return dist
}

// makeTarget runs a target of the repository's Makefile, owned by the test
// and bounded by limit.
func makeTarget(t *testing.T, limit time.Duration, target string, vars ...string) ([]byte, error) {
	t.Helper()
	cmd := testutil.Command(t, "make", append([]string{"--no-print-directory", target}, vars...)...)
	cmd.Dir = repoRoot()
	return testutil.RunBounded(cmd, "make "+strings.Join(append([]string{target}, vars...), " "), limit)
}

func helmBin(t *testing.T) string {
	if h := os.Getenv("HELM"); h != "" {
		return h
	}
	return filepath.Join(repoRoot(), "bin", "helm")
}

// TestCrossRelease checks the test release, built for every platform:
// make test runs it after the other tests, once make test-release, built
// beside them, is done.
func TestCrossRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a release; run without -short")
	}
	dist := testRelease(t)
	files := []string{
		"sha256sums.txt",
		"images.txt",
		"shimkit-" + chartVersion + ".tgz",
		"shimkit-installer-" + version + "-linux-amd64.cdx.json",
		"shimkit-installer-" + version + "-linux-arm64.cdx.json",
		"shimkit-installer-" + version + ".oci.tar",
		"shimkit-operator-" + version + "-linux-amd64.cdx.json",
		"shimkit-operator-" + version + "-linux-arm64.cdx.json",
		"shimkit-operator-" + version + ".oci.tar",
		"kubectl-shimkit-" + version + "-linux-amd64",
		"kubectl-shimkit-" + version + "-linux-amd64.cdx.json",
		"kubectl-shimkit-" + version + "-darwin-arm64.tar.gz",
		"kubectl-shimkit-" + version + "-linux-amd64.tar.gz",
		"kubectl-shimkit.krew.yaml",
		"release-notes.md",
	}
	entries, err := os.ReadDir(dist)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	slices.Sort(files)
	if !slices.Equal(got, files) {
		t.Fatalf("dist holds %q, want %q", got, files)
	}
	t.Run("checksums", func(t *testing.T) {
		checkSums(t, dist, slices.DeleteFunc(slices.Clone(files), func(f string) bool { return f == "sha256sums.txt" }))
	})
	digests := map[string]string{}
	for _, bin := range []string{"shimkit-operator", "shimkit-installer"} {
		t.Run(bin, func(t *testing.T) {
			digests[bin] = checkIndex(t, filepath.Join(dist, bin+"-"+version+".oci.tar"), prefix+bin+":"+version, bin)
			for _, arch := range []string{"amd64", "arm64"} {
				checkSBOM(t, filepath.Join(dist, bin+"-"+version+"-linux-"+arch+".cdx.json"), bin, arch)
			}
		})
	}
	t.Run("chart", func(t *testing.T) {
		chart := filepath.Join(dist, "shimkit-"+chartVersion+".tgz")
		checkChartYAML(t, chart)
		if out, err := exec.Command(helmBin(t), "lint", "--strict", chart).CombinedOutput(); err != nil {
			t.Errorf("helm lint --strict %s: %v\n%s", filepath.Base(chart), err, out)
		}
		// The chart pins the images the release built, by their index's digest.
		op, inst := prefix+"shimkit-operator:"+version+"@"+digests["shimkit-operator"], prefix+"shimkit-installer:"+version+"@"+digests["shimkit-installer"]
		checkRenderedImages(t, chart, op, inst)
		if images, err := os.ReadFile(filepath.Join(dist, "images.txt")); err != nil || string(images) != op+"\n"+inst+"\n" {
			t.Errorf("images.txt: %v %q, want %q and %q", err, images, op, inst)
		}
	})
	t.Run("krew", func(t *testing.T) { checkKrew(t, dist) })
	t.Run("release notes", func(t *testing.T) {
		notes, err := os.ReadFile(filepath.Join(dist, "release-notes.md"))
		install := "helm install shimkit oci://registry.example/shimkit/charts/shimkit --version " + chartVersion + " "
		if err != nil || !strings.HasPrefix(string(notes), "# shimkit "+version+"\n") || !strings.Contains(string(notes), "\n### Added\n") || strings.Contains(string(notes), "## [Unreleased]") ||
			!strings.Contains(string(notes), install) || strings.Contains(string(notes), "/blob/main/") || !strings.Contains(string(notes), "/blob/"+version+"/") || !strings.Contains(string(notes), "`"+prefix+"shimkit-operator:"+version+"@"+digests["shimkit-operator"]+"`") {
			t.Errorf("release-notes.md: %v; want the Unreleased section linking the tag's files, %q and the images' digests:\n%s", err, install, notes)
		}
	})
	t.Run("kubectl-shimkit", func(t *testing.T) {
		plugin := filepath.Join(dist, "kubectl-shimkit-"+version+"-linux-amd64")
		checkVersion(t, plugin, "kubectl-shimkit")
		checkSBOM(t, plugin+".cdx.json", "kubectl-shimkit", "amd64")
	})
}

// A version that is not semver, or whose CHANGELOG section is not
// written, is refused before anything is written.
func TestReleaseBadVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("runs make release; run without -short")
	}
	dist := filepath.Join(t.TempDir(), "dist")
	for v, want := range map[string]string{
		"1.2.3": "want a semantic version", "v1.2": "want a semantic version", "v1.2.3 extra": "want a semantic version", "latest": "want a semantic version",
		// A release whose changes CHANGELOG.md does not say.
		"v99.0.0": "CHANGELOG.md has no section ## [99.0.0]",
	} {
		out, err := makeTarget(t, time.Minute, "release", "VERSION="+v, "DIST="+dist, "IMAGE_PREFIX="+prefix)
		if err == nil || !strings.Contains(string(out), want) {
			t.Errorf("VERSION=%q: %v, want a refusal saying %q:\n%s", v, err, want, out)
		}
		if _, err := os.Stat(dist); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("VERSION=%q: %s was written", v, dist)
		}
	}
}

// make release and make publish without VERSION or IMAGE_PREFIX are refused
// at once, naming the variable, before a tool or binary is built: a chart
// whose images name no registry cannot be installed.
func TestReleaseRequiresVariables(t *testing.T) {
	dist := filepath.Join(t.TempDir(), "dist")
	for _, tc := range []struct {
		target string
		vars   []string
		want   string
	}{
		{"release", []string{"VERSION=", "IMAGE_PREFIX=" + prefix}, "VERSION=vX.Y.Z is required"},
		{"release", []string{"VERSION=" + version}, "IMAGE_PREFIX=registry.example/shimkit/ is required"},
		{"publish", []string{"VERSION=", "IMAGE_PREFIX=" + prefix}, "VERSION=vX.Y.Z is required"},
		{"publish", []string{"VERSION=" + version}, "IMAGE_PREFIX=registry.example/shimkit/ is required"},
	} {
		// Tools missing from TOOLBIN would be built first, were the
		// refusal not made before them.
		vars := append([]string{"DIST=" + dist, "TOOLBIN=" + t.TempDir()}, tc.vars...)
		start := time.Now()
		out, err := makeTarget(t, time.Minute, tc.target, vars...)
		took := time.Since(start)
		if err == nil || !strings.Contains(string(out), tc.want) || took > 5*time.Second {
			t.Errorf("make %s %q: %v after %s, want a refusal naming %q in under 5 s:\n%s", tc.target, tc.vars, err, took, tc.want, out)
		}
		if _, err := os.Stat(dist); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("make %s %q: %s was written", tc.target, tc.vars, dist)
		}
	}
}

// checkSums checks that sha256sums.txt lists exactly files, each with its
// sha256, in sha256sum's format.
func checkSums(t *testing.T, dist string, files []string) {
	data, err := os.ReadFile(filepath.Join(dist, "sha256sums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		sum, file, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("sha256sums.txt: line %q: want '<sha256>  <file>'", line)
		}
		content, err := os.ReadFile(filepath.Join(dist, file))
		if err != nil {
			t.Fatal(err)
		}
		if h := sha256.Sum256(content); hex.EncodeToString(h[:]) != sum {
			t.Errorf("sha256sums.txt: %s: %s, the file's is %x", file, sum, h)
		}
		listed = append(listed, file)
	}
	slices.Sort(listed)
	if !slices.Equal(listed, files) {
		t.Errorf("sha256sums.txt lists %q, want %q", listed, files)
	}
}

// checkChartYAML checks the packaged chart's version and appVersion.
func checkChartYAML(t *testing.T, chart string) {
	data := fileInTgz(t, chart, "shimkit/Chart.yaml")
	var meta struct {
		Name        string            `json:"name"`
		Version     string            `json:"version"`
		AppVersion  string            `json:"appVersion"`
		KubeVersion string            `json:"kubeVersion"`
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.Unmarshal(data, &meta); err != nil {
		t.Fatal(err)
	}
	oldest, err := testutil.Version(testutil.KubeOldest)
	if err != nil {
		t.Fatal(err)
	}
	if minor := strings.Join(strings.Split(strings.TrimPrefix(oldest, "v"), ".")[:2], "."); meta.KubeVersion != ">="+minor+".0-0" {
		t.Errorf("Chart.yaml: kubeVersion %q, want %q: the oldest Kubernetes the tests run is %s", meta.KubeVersion, ">="+minor+".0-0", oldest)
	}
	if meta.Name != "shimkit" || meta.Version != chartVersion || meta.AppVersion != version {
		t.Errorf("Chart.yaml: name %q, version %q, appVersion %q; want shimkit, %s, %s", meta.Name, meta.Version, meta.AppVersion, chartVersion, version)
	}
	if got := meta.Annotations["artifacthub.io/license"]; got != license {
		t.Errorf("Chart.yaml: annotation artifacthub.io/license %q, want %s", got, license)
	}
	checkLegal(t, chart, map[string][]byte{"LICENSE": fileInTgz(t, chart, "shimkit/LICENSE"), "NOTICE": fileInTgz(t, chart, "shimkit/NOTICE")})
}

func fileInTgz(t *testing.T, tgz, name string) []byte {
	t.Helper()
	f, err := os.Open(tgz)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s: no %s: %v", tgz, name, err)
		}
		if h.Name == name {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return data
		}
	}
}

// checkRenderedImages renders the chart with its defaults and checks the
// operator's image and the installer image it passes.
func checkRenderedImages(t *testing.T, chart, operatorImage, installerImage string, flags ...string) {
	out, err := exec.Command(helmBin(t), append([]string{"template", "shimkit", chart, "--namespace", "shimkit-system"}, flags...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	found := false
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var obj struct {
			Kind string `json:"kind"`
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Image string `json:"image"`
							Env   []struct {
								Name  string `json:"name"`
								Value string `json:"value"`
							} `json:"env"`
						} `json:"containers"`
					} `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil || obj.Kind != "Deployment" {
			continue
		}
		found = true
		c := obj.Spec.Template.Spec.Containers[0]
		if c.Image != operatorImage {
			t.Errorf("the operator's default image: %s, want %s", c.Image, operatorImage)
		}
		var inst string
		for _, e := range c.Env {
			if e.Name == "SHIMKIT_INSTALLER_IMAGE" {
				inst = e.Value
			}
		}
		if inst != installerImage {
			t.Errorf("the installer's default image (SHIMKIT_INSTALLER_IMAGE): %q, want %s", inst, installerImage)
		}
	}
	if !found {
		t.Fatalf("helm template: no Deployment:\n%s", out)
	}
}

// checkVersion checks that the executable says it is the release's binary.
func checkVersion(t *testing.T, exe, binary string) {
	t.Helper()
	out, err := exec.Command(exe, "--version").CombinedOutput()
	if want := binary + " " + version + " "; err != nil || !strings.HasPrefix(string(out), want) {
		t.Errorf("%s --version: %v, %q; want it to start with %q", binary, err, out, want)
	}
}

// checkSBOM checks that the SBOM is CycloneDX, describes the binary at the
// release's version and lists the modules it links.
func checkSBOM(t *testing.T, file, binary, arch string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var bom struct {
		BOMFormat string `json:"bomFormat"`
		Metadata  struct {
			Component struct {
				Name     string `json:"name"`
				Version  string `json:"version"`
				PURL     string `json:"purl"`
				Licenses []struct {
					License struct {
						ID string `json:"id"`
					} `json:"license"`
				} `json:"licenses"`
			} `json:"component"`
		} `json:"metadata"`
		Components []struct {
			Name    string `json:"name"`
			Version string `json:"version"`
			Hashes  []struct {
				Alg string `json:"alg"`
			} `json:"hashes"`
		} `json:"components"`
	}
	if err := json.Unmarshal(data, &bom); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	c := bom.Metadata.Component
	if bom.BOMFormat != "CycloneDX" || c.Name != "github.com/shimkit/shimkit" || c.Version != version || !strings.HasSuffix(c.PURL, "#cmd/"+binary) ||
		!strings.Contains(c.PURL, "goarch="+arch+"&") {
		t.Errorf("%s: format %q, component %+v; want CycloneDX, github.com/shimkit/shimkit %s, cmd/%s, goarch=%s", file, bom.BOMFormat, c, version, binary, arch)
	}
	if len(c.Licenses) != 1 || c.Licenses[0].License.ID != license {
		t.Errorf("%s: the component's licenses %+v, want %s", file, c.Licenses, license)
	}
	mods := map[string]bool{}
	for _, m := range bom.Components {
		if m.Version == "" || len(m.Hashes) == 0 {
			t.Errorf("%s: module %s without version or hash", file, m.Name)
		}
		mods[m.Name] = true
	}
	// A module each binary links for sure: the installer edits TOML, the
	// operator is a controller-runtime manager.
	want := map[string]string{"shimkit-installer": "github.com/pelletier/go-toml/v2", "shimkit-operator": "sigs.k8s.io/controller-runtime", "kubectl-shimkit": "k8s.io/client-go"}[binary]
	if !mods[want] {
		t.Errorf("%s: %d modules, not %s", file, len(mods), want)
	}
}
