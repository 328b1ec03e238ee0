package charttest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shimkit/shimkit/internal/yamlpath"
)

// TestImageDigests: image.digest and installer.image.digest pin the
// operator's image and the installers' (repository:tag@digest); without
// them the tag names the image; a digest that is no sha256 is refused by
// the chart's schema, naming the value.
func TestImageDigests(t *testing.T) {
	for _, tc := range []struct {
		name                string
		args                []string
		operator, installer string
	}{
		{"defaults", nil, "shimkit-operator:latest", "shimkit-installer:latest"},
		{"all values", []string{"-f", filepath.Join(chartDir(), "ci", "all-values.yaml")},
			"registry.example/shimkit/shimkit-operator:v0.1.0@sha256:0000000000000000000000000000000000000000000000000000000000000001",
			"registry.example/shimkit/shimkit-installer:v0.1.0@sha256:0000000000000000000000000000000000000000000000000000000000000002"},
	} {
		d := one(t, render(t, tc.args...), "Deployment")
		c := yamlpath.Get(d, "spec", "template", "spec", "containers", "name=manager")
		if c == nil {
			c = yamlpath.Get(d, "spec", "template", "spec", "containers", "0")
		}
		if got := str(c.(map[string]any), "image"); got != tc.operator {
			t.Errorf("%s: operator image %q, want %q", tc.name, got, tc.operator)
		}
		if got := str(yamlpath.Get(c, "env", "name=SHIMKIT_INSTALLER_IMAGE").(map[string]any), "value"); got != tc.installer {
			t.Errorf("%s: installer image %q, want %q", tc.name, got, tc.installer)
		}
	}
	out, err := exec.Command(helmBin(t), "template", "shimkit", chartDir(), "--set", "image.digest=latest").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "digest") {
		t.Errorf("a digest that is no sha256: %v\n%s", err, out)
	}
}
