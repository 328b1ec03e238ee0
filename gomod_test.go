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

// TestToolsShareTheGraph: every module that Helm and kustomize (built
// from hack/tools for make test) compile and shimkit's packages compile too
// is selected at one version in both go.mod files. Then a cold make test
// compiles the Kubernetes client libraries once for both, not once each
// (BENCHMARKS.md: the cold run). The test names each module apart and the
// go get that aligns it.
func TestToolsShareTheGraph(t *testing.T) {
	if testing.Short() {
		t.Skip("lists both modules' packages; run without -short")
	}
	tools := moduleVersions(t, "hack/tools", "helm.sh/helm/v4/cmd/helm", "sigs.k8s.io/kustomize/kustomize/v5")
	ours := moduleVersions(t, ".", "-test", "./...")
	shared := 0
	for mod, v := range tools {
		w, ok := ours[mod]
		if !ok {
			continue
		}
		shared++
		if v != w {
			newer := w
			if semver.Compare(v, w) > 0 {
				newer = v
			}
			t.Errorf("%s: %s in hack/tools/go.mod, %s in go.mod: both compile it, so select one version (go get %s@%s in each)", mod, v, w, mod, newer)
		}
	}
	if shared == 0 {
		t.Errorf("no module in common between hack/tools' Helm and kustomize and shimkit: the listing is wrong")
	}
	t.Logf("%d modules compiled once for Helm, kustomize and shimkit", shared)
}

// moduleVersions lists the module path and version of every package the
// packages named (after go list's flags) in dir depend on.
func moduleVersions(t *testing.T, dir string, args ...string) map[string]string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-mod=readonly", "-deps", "-f", "{{with .Module}}{{.Path}} {{.Version}}{{end}}"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list in %s: %v", dir, err)
	}
	mods := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if mod, v, ok := strings.Cut(line, " "); ok && v != "" {
			mods[mod] = v
		}
	}
	return mods
}
