package manager_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/shimkit/shimkit/internal/frontend/manager"
	"github.com/shimkit/shimkit/internal/version"
)

// shimkit-operator --version prints its version and exits 0 without
// reaching for a cluster; --help lists the flag.
func TestVersionFlag(t *testing.T) {
	var out bytes.Buffer
	noEnv := func(string) string { return "" }
	if code := manager.Run(context.Background(), []string{"--version"}, noEnv, &out); code != 0 {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	if want := "shimkit-operator " + version.Version() + " (go"; !strings.HasPrefix(out.String(), want) {
		t.Errorf("%q, want it to start with %q", out.String(), want)
	}
	out.Reset()
	manager.Run(context.Background(), []string{"--help"}, noEnv, &out)
	if !strings.Contains(out.String(), "-version") {
		t.Errorf("--help does not list -version:\n%s", out.String())
	}
}
