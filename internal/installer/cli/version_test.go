package cli_test

import (
	"strings"
	"testing"

	"github.com/shimkit/shimkit/internal/version"
)

// shimkit-installer --version prints its version on stdout and exits 0,
// in each of the forms it accepts.
func TestVersionFlag(t *testing.T) {
	for _, arg := range []string{"--version", "-version", "version"} {
		code, out, errOut := run(t, arg)
		if code != 0 || errOut != "" {
			t.Fatalf("%s: exit %d, stderr %q", arg, code, errOut)
		}
		if want := "shimkit-installer " + version.Version() + " (go"; !strings.HasPrefix(out, want) {
			t.Errorf("%s: %q, want it to start with %q", arg, out, want)
		}
	}
}
