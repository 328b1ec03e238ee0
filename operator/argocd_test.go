package operator_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/yaml"

	"github.com/shimkit/shimkit/internal/argocd"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// argoCheck is the directory of the Shim's Argo CD health check.
const argoCheck = "config/argocd/containerd.x-k8s.io/Shim"

// argoHealth: Argo CD's health check of the Shim, run on the status the
// operator wrote at a stage of TestKstatus, agrees with kstatus: Healthy
// when Current, Degraded when Failed, Progressing when InProgress (Suspended
// when paused). With -update the stage's Shim becomes a test case of the
// check (testdata/<stage>.yaml; health_test.yaml lists them).
func argoHealth(t *testing.T, s *v1alpha1.Shim, stage string, kstatus status.Status) {
	t.Helper()
	script, err := os.ReadFile(filepath.Join(argoCheck, "health.lua"))
	if err != nil {
		t.Fatal(err)
	}
	obj := caseOf(t, s)
	h, err := argocd.Check(string(script), obj)
	want := map[status.Status]string{status.CurrentStatus: argocd.Healthy, status.FailedStatus: argocd.Degraded, status.InProgressStatus: argocd.Progressing}[kstatus]
	if s.Spec.RolloutStrategy != nil && s.Spec.RolloutStrategy.Paused && kstatus != status.CurrentStatus {
		want = argocd.Suspended
	}
	if err != nil || h.Status != want {
		t.Errorf("%s: Argo CD's health %+v, %v; want %s", stage, h, err, want)
	}
	if !*update {
		return
	}
	data, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(argoCheck, "testdata", strings.ReplaceAll(stage, " ", "-")+".yaml")
	if err := os.WriteFile(path, append([]byte("# The Shim as the operator left it at TestKstatus's stage \""+stage+"\" (go test ./operator -run TestKstatus -update).\n"), data...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// caseOf is the Shim as a test case keeps it: what a health check reads
// (the generation, the spec, the observed generation and the conditions),
// the conditions' times fixed.
func caseOf(t *testing.T, s *v1alpha1.Shim) map[string]any {
	t.Helper()
	c := &v1alpha1.Shim{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Shim"}, Spec: s.Spec}
	c.Name, c.Generation, c.DeletionTimestamp = s.Name, s.Generation, s.DeletionTimestamp
	c.Status.ObservedGeneration = s.Status.ObservedGeneration
	for _, cond := range s.Status.Conditions {
		cond.LastTransitionTime = metav1.NewTime(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
		c.Status.Conditions = append(c.Status.Conditions, cond)
	}
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{}
	if err := json.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}
