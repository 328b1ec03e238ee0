package decide_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportBoundary keeps the decisions pure: decide and everything it
// imports are free of client-go and controller-runtime (the API types of
// k8s.io/api and apimachinery are data, and allowed); TestPure checks the
// rest of what a decision may not reach.
func TestImportBoundary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/shimkit/shimkit/internal/operator/decide").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"k8s.io/client-go/", "sigs.k8s.io/controller-runtime"} {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("decide depends on %s", dep)
			}
		}
	}
}
