package shimkit_test

import (
	"encoding/json"
	"os/exec"
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
	clusterSide := []string{"github.com/shimkit/shimkit/operator", "github.com/shimkit/shimkit/rollout", "github.com/shimkit/shimkit/nodelabel",
		"github.com/shimkit/shimkit/runtimeclass", "sigs.k8s.io/controller-runtime", "k8s.io/client-go"}
	for _, pkg := range []string{"fetch", "containerdconfig", "installer", "installer/cli"} {
		for _, d := range deps(pkg, false) {
			for _, c := range clusterSide {
				if strings.HasPrefix(d, c) {
					t.Errorf("node-side %s imports cluster-side %s", pkg, d)
				}
			}
		}
	}
	for _, d := range deps("rollout", false) {
		if strings.HasPrefix(d, "sigs.k8s.io/controller-runtime") || strings.HasPrefix(d, "k8s.io/client-go") {
			t.Errorf("rollout must be pure, imports %s", d)
		}
	}
	for _, d := range deps("operator/api/v1alpha1", true) {
		if strings.Contains(strings.Split(d, "/")[0], ".") && !strings.HasPrefix(d, "k8s.io/apimachinery/") {
			t.Errorf("the API imports %s (only the standard library and apimachinery)", d)
		}
	}
}
