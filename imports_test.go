package shimkit_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestImportBoundaries keeps data flowing one way: node-side packages never
// import cluster-side ones, rollout has no client, and the API types import
// only the standard library and apimachinery.
func TestImportBoundaries(t *testing.T) {
	deps := func(pkg string, direct bool) []string {
		t.Helper()
		out, err := exec.Command("go", "list", "-json", "./"+pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		var p struct{ Imports, Deps []string }
		if err := json.Unmarshal(out, &p); err != nil {
			t.Fatal(err)
		}
		if direct {
			return p.Imports
		}
		return p.Deps
	}
	clusterSide := []string{"github.com/shimkit/shimkit/operator", "github.com/shimkit/shimkit/internal/operator", "github.com/shimkit/shimkit/rollout", "github.com/shimkit/shimkit/nodelabel",
		"github.com/shimkit/shimkit/runtimeclass", "sigs.k8s.io/controller-runtime", "k8s.io/client-go"}
	for _, pkg := range []string{"fetch", "containerdconfig", "crioconfig", "installer", "internal/installer/cli", "installer/plan"} {
		for _, d := range deps(pkg, false) {
			for _, c := range clusterSide {
				if strings.HasPrefix(d, c) {
					t.Errorf("node-side %s imports cluster-side %s", pkg, d)
				}
			}
		}
	}
	// Image builders that embed fetch or containerdconfig do not link the
	// signature stack: verification lives in package signature.
	for _, pkg := range []string{"fetch", "containerdconfig", "installer/plan"} {
		for _, d := range deps(pkg, false) {
			if d == "github.com/shimkit/shimkit/signature" || strings.HasPrefix(d, "github.com/sigstore/") {
				t.Errorf("%s links the signature stack (%s)", pkg, d)
			}
		}
	}
	for _, d := range deps("rollout", false) {
		if strings.HasPrefix(d, "sigs.k8s.io/controller-runtime") || strings.HasPrefix(d, "k8s.io/client-go") {
			t.Errorf("rollout must be pure, imports %s", d)
		}
	}
	// The contract between cluster and node links nothing but the standard
	// library into either side.
	for _, d := range deps("installer/plan", false) {
		if strings.Contains(strings.Split(d, "/")[0], ".") {
			t.Errorf("installer/plan imports %s (only the standard library)", d)
		}
	}
	for _, d := range deps("operator/api/v1alpha1", true) {
		if strings.Contains(strings.Split(d, "/")[0], ".") && !strings.HasPrefix(d, "k8s.io/apimachinery/") {
			t.Errorf("the API imports %s (only the standard library and apimachinery)", d)
		}
	}
}

// TestNoEnvironmentContract: the operator hands the installer a typed plan,
// never environment variables, so no SHIMKIT_* name appears on both sides.
func TestNoEnvironmentContract(t *testing.T) {
	names := func(dir string) map[string]bool {
		out := map[string]bool{}
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			data, err := os.ReadFile(p)
			for _, m := range envName.FindAll(data, -1) {
				out[string(m)] = true
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	installer := names("installer")
	for n := range names("internal/installer") {
		installer[n] = true
	}
	operator := names("operator")
	for n := range names("internal/operator") {
		operator[n] = true
	}
	for n := range operator {
		if installer[n] {
			t.Errorf("%s is used by both the operator and the installer", n)
		}
	}
}

var envName = regexp.MustCompile(`SHIMKIT_[A-Z0-9_]+`)
