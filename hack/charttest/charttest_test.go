// Package charttest tests what the Helm chart (charts/shimkit) renders for
// monitoring: the operator's alert rules, with promtool's unit tests, and
// the Service, ServiceMonitor and dashboard ConfigMap. It needs helm
// (bin/helm, make tools; or $HELM) and promtool (Debian's prometheus
// package; or $PROMTOOL): missing, the tests fail under CI=true and are
// skipped otherwise (and always with -short: make test-unit).
package charttest

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/internal/yamlpath"
	"sigs.k8s.io/yaml"
)

type object = map[string]any

// repoRoot is the repository's root.
func repoRoot() string { return testutil.RepoRoot() }

func chartDir() string { return filepath.Join(repoRoot(), "charts", "shimkit") }

// tool returns the binary that env names, else fallback (a path, or a name
// looked up in PATH). Missing, it fails the test in CI and skips it elsewhere.
func tool(t *testing.T, env, fallback, install string) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("needs %s; run without -short", filepath.Base(fallback))
	}
	p := os.Getenv(env)
	if p == "" {
		p = fallback
	}
	found, err := exec.LookPath(p)
	if err == nil {
		return found
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s: %v (CI=true: install it: %s)", p, err, install)
	}
	t.Skipf("%s: %v; skipped outside CI (install it: %s; or set $%s)", p, err, install, env)
	return ""
}

func helmBin(t *testing.T) string {
	return tool(t, "HELM", filepath.Join(repoRoot(), "bin", "helm"), "make tools")
}

func promtoolBin(t *testing.T) string {
	return tool(t, "PROMTOOL", "promtool", "apt-get install prometheus")
}

// render runs helm template on the chart with args (--set, -f) and returns
// its objects.
func render(t *testing.T, args ...string) []object {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(helmBin(t), append([]string{"template", "shimkit", chartDir(), "--namespace", "shimkit-system"}, args...)...)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home, "HELM_CACHE_HOME="+home, "HELM_DATA_HOME="+home)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var objs []object
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(out), -1) {
		var o object
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("%v in\n%s", err, doc)
		}
		if len(o) > 0 {
			objs = append(objs, o)
		}
	}
	return objs
}

func ofKind(objs []object, kind string) []object {
	var out []object
	for _, o := range objs {
		if o["kind"] == kind {
			out = append(out, o)
		}
	}
	return out
}

func one(t *testing.T, objs []object, kind string) object {
	t.Helper()
	l := ofKind(objs, kind)
	if len(l) != 1 {
		t.Fatalf("%d objects of kind %s rendered, want 1", len(l), kind)
	}
	return l[0]
}

func str(o any, path ...string) string { s, _ := yamlpath.Get(o, path...).(string); return s }

// rule is one alerting rule as the PrometheusRule has it.
type rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type ruleGroup struct {
	Name  string `json:"name"`
	Rules []rule `json:"rules"`
}

// ruleGroups renders the chart's PrometheusRule with args and returns its
// groups.
func ruleGroups(t *testing.T, args ...string) []ruleGroup {
	t.Helper()
	pr := one(t, render(t, args...), "PrometheusRule")
	data, err := yaml.Marshal(yamlpath.Get(pr, "spec", "groups"))
	if err != nil {
		t.Fatal(err)
	}
	var groups []ruleGroup
	if err := yaml.UnmarshalStrict(data, &groups); err != nil {
		t.Fatalf("the PrometheusRule's groups: %v\n%s", err, data)
	}
	return groups
}

func ruleNamed(t *testing.T, groups []ruleGroup, alert string) rule {
	t.Helper()
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Alert == alert {
				return r
			}
		}
	}
	t.Fatalf("no alert %s rendered", alert)
	return rule{}
}

// writeRules writes the groups as a Prometheus rule file in dir.
func writeRules(t *testing.T, dir string, groups []ruleGroup) string {
	t.Helper()
	data, err := yaml.Marshal(map[string]any{"groups": groups})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func promtool(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command(promtoolBin(t), args...).CombinedOutput()
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("promtool: %v", err)
		}
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
