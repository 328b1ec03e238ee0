package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/internal/testutil/mdrun"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestTutorialNodeChoice runs the tutorial's "Choose the nodes" block with
// the real kubectl against a real API server, on the clusters newcomers
// use: workers beside a control plane, the single node of kind (its
// control-plane label ""), of k3s ("true"), and one without the label.
// The block labels the node it should, and the tutorial's Shim, written
// with what the block exported, selects that node by the operator's rule
// (nodeview.Matches: a control-plane node only when the selector names
// the label). The e2e release scenario runs the page on kind's kind of
// node; this covers the others.
func TestTutorialNodeChoice(t *testing.T) {
	testutil.RequireHarness(t)
	choose, shimBlock := tutorialBlocks(t)
	env := testutil.StartEnv(t, v1alpha1.AddToScheme)
	kubeconfig := testutil.WriteKubeconfig(t, env.Config, filepath.Join(t.TempDir(), "kubeconfig"))
	kubectl := testutil.BinDir(t, "kube", testutil.KubeNewest, "kubectl")
	for _, tc := range []struct {
		name  string
		nodes map[string]map[string]string // name → labels
		want  string                       // the node chosen
	}{
		{"workers", map[string]map[string]string{"cp": {nodeview.ControlPlaneLabel: ""}, "worker-a": nil, "worker-b": nil}, "worker-a"},
		{"kind", map[string]map[string]string{"kind-control-plane": {nodeview.ControlPlaneLabel: ""}}, "kind-control-plane"},
		{"k3s", map[string]map[string]string{"k3s-server": {nodeview.ControlPlaneLabel: "true", "node-role.kubernetes.io/master": "true"}}, "k3s-server"},
		{"one node, no role", map[string]map[string]string{"node": nil}, "node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if err := env.Client.DeleteAllOf(ctx, &corev1.Node{}); err != nil {
				t.Fatal(err)
			}
			for name, labels := range tc.nodes {
				if err := env.Client.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}); err != nil {
					t.Fatal(err)
				}
			}
			dir := t.TempDir()
			sess := mdrun.NewSession(dir, []string{"PATH=" + kubectl + ":/usr/bin:/bin", "KUBECONFIG=" + kubeconfig, "HOME=" + dir,
				"SPIN_RELEASES=https://releases.invalid", "SPIN_VERSION=v0.0.0"})
			for _, b := range []mdrun.Block{choose, shimBlock} {
				if out, err := sess.Run(ctx, b); err != nil {
					t.Fatalf("block at %s: %v\n%s", b.Where(), err, out)
				}
			}
			node := &corev1.Node{}
			if err := env.Client.Get(ctx, client.ObjectKey{Name: tc.want}, node); err != nil {
				t.Fatal(err)
			}
			if node.Labels["runtime.shimkit.dev/spin"] != "enabled" {
				t.Errorf("node %s not labelled: %v", tc.want, node.Labels)
			}
			data, err := os.ReadFile(filepath.Join(dir, "spin-shim.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			shim := &v1alpha1.Shim{}
			if err := yaml.UnmarshalStrict(data, shim); err != nil {
				t.Fatalf("spin-shim.yaml: %v\n%s", err, data)
			}
			if !nodeview.Matches(shim, node) {
				t.Errorf("the tutorial's Shim (nodeSelector %v) does not select node %s (labels %v)", shim.Spec.NodeSelector, node.Name, node.Labels)
			}
		})
	}
}

// tutorialBlocks returns the tutorial's node choice, and the heredoc that
// writes its Shim (the block's first command alone: the plan after it needs
// the plugin).
func tutorialBlocks(t *testing.T) (choose, shim mdrun.Block) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(repoRoot(), "docs", "tutorial.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := mdrun.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	heredoc := regexp.MustCompile(`(?s)cat > spin-shim\.yaml <<EOF\n.*?\nEOF\n`)
	for _, b := range blocks {
		switch {
		case !b.Runs():
		case b.Section == "Choose the nodes" && strings.Contains(b.Text, "kubectl label node"):
			choose = b
		case shim.Text == "" && heredoc.MatchString(b.Text):
			shim = b
			shim.Text = heredoc.FindString(b.Text)
		}
	}
	if choose.Text == "" || shim.Text == "" {
		t.Fatal("docs/tutorial.md: no node choice block, or no block writing spin-shim.yaml")
	}
	return choose, shim
}
