package argocd_test

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/shimkit/shimkit/internal/argocd"
	"github.com/shimkit/shimkit/internal/testutil"
)

// shimCheck is the directory of the Shim's check, as Argo CD's
// resource_customizations lays it out.
var shimCheck = filepath.Join(testutil.RepoRoot(), "operator", "config", "argocd", "containerd.x-k8s.io", "Shim")

// TestShimHealthCases runs the Shim's health check on its test cases
// (health_test.yaml, Argo CD's format: the statuses the operator wrote in
// TestKstatus, one per stage), each giving its status and message.
func TestShimHealthCases(t *testing.T) {
	script, err := os.ReadFile(filepath.Join(shimCheck, "health.lua"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(shimCheck, "health_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cases struct {
		Tests []struct {
			HealthStatus argocd.Health `json:"healthStatus"`
			InputPath    string        `json:"inputPath"`
		} `json:"tests"`
	}
	if err := yaml.UnmarshalStrict(data, &cases); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, tc := range cases.Tests {
		t.Run(tc.InputPath, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join(shimCheck, tc.InputPath))
			if err != nil {
				t.Fatal(err)
			}
			obj := map[string]any{}
			if err := yaml.Unmarshal(in, &obj); err != nil {
				t.Fatal(err)
			}
			got, err := argocd.Check(string(script), obj)
			if err != nil || got != tc.HealthStatus {
				t.Errorf("%+v, %v; want %+v", got, err, tc.HealthStatus)
			}
			seen[got.Status] = true
		})
	}
	for _, s := range []string{argocd.Healthy, argocd.Progressing, argocd.Degraded, argocd.Suspended} {
		if !seen[s] {
			t.Errorf("no test case is %s", s)
		}
	}
}

// TestCheckRefusesBadScripts: a script that fails, returns no table or
// an unknown status is an error, not a health.
func TestCheckRefusesBadScripts(t *testing.T) {
	for _, script := range []string{`error("boom")`, `return 1`, `return {status = "Fine"}`, `return obj.nope.field`} {
		if h, err := argocd.Check(script, map[string]any{}); err == nil {
			t.Errorf("%q: %+v, want an error", script, h)
		}
	}
	h, err := argocd.Check(`return {status = "Healthy", message = obj.metadata.name .. #obj.items}`, map[string]any{"metadata": map[string]any{"name": "a"}, "items": []any{1.0, "x"}})
	if err != nil || h.Message != "a2" {
		t.Errorf("%+v, %v", h, err)
	}
}
