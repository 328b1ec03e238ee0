package report_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/frontend/report"
	"github.com/shimkit/shimkit/internal/golden"
	"github.com/shimkit/shimkit/internal/nodelabel/record"
	"github.com/shimkit/shimkit/internal/operator/decide"
	"github.com/shimkit/shimkit/internal/operator/jobview"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var now = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

const (
	current = "a1b2c3d4e5f60718"
	older   = "0f0e0d0c0b0a0908"
	uid     = types.UID("shim-uid")
)

// fleetOf is one node of each state kubectl shimkit status tells apart.
func fleetOf() (*v1alpha1.Shim, []*corev1.Node, []*batchv1.Job) {
	shim := &v1alpha1.Shim{
		ObjectMeta: metav1.ObjectMeta{Name: "spin", UID: uid},
		Spec:       v1alpha1.ShimSpec{NodeSelector: map[string]string{"pool": "wasm"}, RuntimeClass: v1alpha1.RuntimeClassSpec{Name: "spin", Handler: "spin"}},
		Status: v1alpha1.ShimStatus{SpecHash: current,
			Artifact:   &v1alpha1.ResolvedArtifact{Source: "oci.invalid/spin:v2", Digest: "sha256:2222"},
			Revisions:  []v1alpha1.Revision{{SpecHash: older, Digest: "sha256:1111"}},
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonRollingOut, Message: "2 of 6 nodes have the current spec"}}},
	}
	node := func(name, runtime string, labels map[string]string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"pool": "wasm", "kubernetes.io/os": "linux"}, Annotations: map[string]string{}}}
		n.Status.NodeInfo.ContainerRuntimeVersion = runtime
		for k, v := range labels {
			n.Labels[k] = v
		}
		return n
	}
	installed := func(n *corev1.Node, hash string) *corev1.Node {
		n.Labels[record.Key("spin")], n.Annotations[record.Key("spin")] = record.Installed, hash
		n.Annotations[record.VerifiedKey("spin")] = `{"shimUID":"shim-uid","specHash":"` + hash + `","time":"2026-11-26T09:00:00Z"}` // as nodelabel.Mark writes
		return n
	}
	failed := node("n-failed", "containerd://2.2.0", nil)
	failed.Annotations[record.FailureKey("spin")] = `{"shimUID":"shim-uid","op":"install","specHash":"` + current + `","reason":"Conflict","message":"handler spin in /etc/containerd/config.toml is someone else's","time":"2026-11-26T11:50:00Z"}`
	leaving := installed(node("n-leaving", "containerd://1.7.30", nil), older)
	leaving.Labels["pool"] = "general"
	nodes := []*corev1.Node{
		installed(node("n-current", "containerd://2.2.0", nil), current),
		installed(node("n-outdated", "containerd://1.7.30", nil), older),
		node("n-installing", "containerd://2.2.0", nil),
		failed,
		node("n-pending", "containerd://2.2.0", nil),
		node("n-crio", "cri-o://1.34.0", nil),
		node("n-windows", "containerd://2.2.0", map[string]string{"kubernetes.io/os": "windows"}),
		node("n-other", "containerd://2.2.0", map[string]string{"pool": "general"}),
		leaving,
	}
	job := func(node, hash string, age time.Duration, cond batchv1.JobConditionType) *batchv1.Job {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{
			Name: jobview.JobName("spin", node, jobview.OpInstall, hash), Namespace: "shimkit-system", UID: types.UID("job-" + node),
			CreationTimestamp: metav1.NewTime(now.Add(-age)),
			Labels:            map[string]string{jobview.LabelShim: "spin", jobview.LabelNode: node, jobview.LabelOp: jobview.OpInstall, jobview.LabelSpecHash: hash},
			Annotations:       map[string]string{jobview.AnnotationCreated: now.Add(-age).Format(time.RFC3339Nano)},
			OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(shim, v1alpha1.GroupVersion.WithKind("Shim"))},
		}}
		if cond != "" {
			j.Status.Conditions = []batchv1.JobCondition{{Type: cond, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-age + 40*time.Second)), Reason: "PodFailurePolicy", Message: "exit code 5"}}
		}
		return j
	}
	jobs := []*batchv1.Job{
		job("n-current", current, 3*time.Hour, batchv1.JobComplete),
		job("n-installing", current, 25*time.Second, ""),
		job("n-failed", current, 11*time.Minute, batchv1.JobFailed),
	}
	return shim, nodes, jobs
}

// results is what the installers of the fleet's finished Jobs reported:
// n-failed's refused a handler of someone else's.
func results(j *batchv1.Job) *plan.NodeResult {
	if j.Labels[jobview.LabelNode] == "n-failed" {
		return &plan.NodeResult{Outcome: plan.RolledBack, Reason: plan.ReasonConflict, Message: "handler spin in /etc/containerd/config.toml is someone else's"}
	}
	return nil
}

// TestStatusGolden: kubectl shimkit status's table, wide table, JSON and
// YAML for a fleet with a node of every state.
func TestStatusGolden(t *testing.T) {
	shim, nodes, jobs := fleetOf()
	rep := report.StatusOf(shim, report.Status(shim, decide.NodeViewsOf(shim, nodes, jobs, results)))
	for _, wide := range []bool{false, true} {
		var b bytes.Buffer
		if err := report.WriteStatus(&b, rep, wide, now); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join("testdata", map[bool]string{false: "status.table", true: "status.wide"}[wide]), b.Bytes(), *update)
	}
	golden.Check(t, filepath.Join("testdata", "status.json"), machine(t, report.KindStatus, rep, "json"), *update)
	golden.Check(t, filepath.Join("testdata", "status.yaml"), machine(t, report.KindStatus, rep, "yaml"), *update)
	var names bytes.Buffer
	if err := report.WriteNames(&names, rep); err != nil || !strings.HasPrefix(names.String(), "node/n-crio\nnode/n-current\n") {
		t.Errorf("names: %v\n%s", err, names.String())
	}
	// The first line counts the rows below it.
	if want := "Shim spin: 8 nodes: 1 Current, 1 Outdated, 1 Installing, 1 Failed, 1 Pending, 1 ToRemove, 2 Skipped; Ready=False (RollingOut)"; rep.Summary() == "" || !strings.HasPrefix(firstLine(t, rep), want) {
		t.Errorf("header %q, want %q", firstLine(t, rep), want)
	}
}

// machine is v as kubectl shimkit prints it for machines (-o json|yaml):
// cli-runtime's printers on report.Document.
func machine(t *testing.T, kind string, v any, format string) []byte {
	t.Helper()
	doc, err := report.Document(kind, v)
	if err != nil {
		t.Fatal(err)
	}
	var p printers.ResourcePrinter = &printers.JSONPrinter{}
	if format == "yaml" {
		p = &printers.YAMLPrinter{}
	}
	var b bytes.Buffer
	if err := p.PrintObj(doc, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func firstLine(t *testing.T, rep report.StatusReport) string {
	t.Helper()
	var b bytes.Buffer
	if err := report.WriteStatus(&b, rep, false, now); err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(b.String(), "\n")
	return line
}

// TestStatusStates: each node's state and reason.
func TestStatusStates(t *testing.T) {
	shim, nodes, jobs := fleetOf()
	got := map[string]string{}
	for _, r := range report.Status(shim, decide.NodeViewsOf(shim, nodes, jobs, results)) {
		got[r.Node] = r.State + "/" + r.Reason
	}
	want := map[string]string{
		"n-current": "Current/", "n-outdated": "Outdated/", "n-installing": "Installing/",
		"n-failed": "Failed/Conflict", "n-pending": "Pending/", "n-crio": "Skipped/RuntimeNotSupported",
		"n-windows": "Skipped/NotLinux", "n-leaving": "ToRemove/",
	}
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(want)
	if string(a) != string(b) {
		t.Errorf("states\n got  %s\n want %s", a, b)
	}
}
