package shimkit_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// TestGoDirectiveIsTheFloor: go.mod asks for no newer Go than the
// dependencies do, so that a library user is not forced onto a newer Go
// by shimkit; the test names the modules that set the floor.
func TestGoDirectiveIsTheFloor(t *testing.T) {
	data, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.ParseLax("go.mod", data, nil)
	if err != nil || f.Go == nil {
		t.Fatalf("go.mod: %v", err)
	}
	out, err := exec.Command("go", "list", "-mod=readonly", "-m", "-f", "{{if not .Main}}{{.GoVersion}} {{.Path}}{{end}}", "all").Output()
	if err != nil {
		t.Fatalf("go list -m all: %v", err)
	}
	floor, setters := "v0", []string(nil)
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		v, mod, ok := strings.Cut(line, " ")
		if !ok || v == "" {
			continue
		}
		switch c := semver.Compare("v"+v, floor); {
		case c > 0:
			floor, setters = "v"+v, []string{mod}
		case c == 0:
			setters = append(setters, mod)
		}
	}
	if semver.Compare("v"+f.Go.Version, floor) != 0 {
		t.Errorf("go.mod says go %s; the dependencies need go %s at least (%s): say that", f.Go.Version, strings.TrimPrefix(floor, "v"), strings.Join(setters, ", "))
	}
	t.Logf("go %s, set by %s", f.Go.Version, strings.Join(setters, ", "))
}
