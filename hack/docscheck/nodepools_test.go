package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/shimkit/shimkit/internal/testutil"
)

// nodePoolCRDs are the CRDs of the node pool APIs, by module: the
// Karpenter and Cluster API objects the node types guide shows.
var nodePoolCRDs = map[string][]string{
	"sigs.k8s.io/karpenter": {"pkg/apis/crds/karpenter.sh_nodepools.yaml"},
	"sigs.k8s.io/cluster-api": {
		"config/crd/bases/cluster.x-k8s.io_machinedeployments.yaml",
		"bootstrap/kubeadm/config/crd/bases/bootstrap.cluster.x-k8s.io_kubeadmconfigtemplates.yaml",
	},
}

// The node pool manifests of the node types guide (Karpenter's NodePool,
// Cluster API's KubeadmConfigTemplate and MachineDeployment) are ones
// their APIs admit: created as dry runs against their CRDs (OpenAPI and
// CEL rules) at the versions hack/versions.env pins. And what the guide
// says holds: Karpenter refuses a NodePool declaring the Shim's own label,
// and the guide's NodePool declares the guide Shim's schedulingLabel
// instead.
func TestDocNodePoolsAdmitted(t *testing.T) {
	if testing.Short() {
		t.Skip("needs kube-apiserver and etcd (make bins) and the node pool APIs' modules")
	}
	var crds []string
	for mod, files := range nodePoolCRDs {
		dir := moduleDir(t, mod, map[string]string{"sigs.k8s.io/karpenter": "KARPENTER_VERSION", "sigs.k8s.io/cluster-api": "CLUSTER_API_VERSION"}[mod])
		for _, f := range files {
			crds = append(crds, filepath.Join(dir, f))
		}
	}
	md, err := os.ReadFile(filepath.Join(repoRoot(), "docs/guides/node-types.md"))
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	scheduling := "" // the guide Shim's spec.schedulingLabel
	for _, m := range yamlBlock.FindAllStringSubmatch(string(md), -1) {
		for _, doc := range strings.Split(m[1], "\n---\n") {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
				continue
			}
			if u.GetKind() == "Shim" {
				if key, _, _ := unstructured.NestedString(u.Object, "spec", "schedulingLabel"); key != "" {
					scheduling = key
				}
			}
			if !strings.Contains(u.GetAPIVersion(), "karpenter.sh") && !strings.Contains(u.GetAPIVersion(), "cluster.x-k8s.io") {
				continue
			}
			objs = append(objs, u)
		}
	}
	if scheduling == "" {
		t.Fatal("no Shim with a schedulingLabel in the node types guide")
	}
	if len(objs) != 3 {
		t.Fatalf("%d node pool manifests in the node types guide, want its NodePool, KubeadmConfigTemplate and MachineDeployment", len(objs))
	}
	env := testutil.StartEnvWith(t, func(e *envtest.Environment) { e.CRDDirectoryPaths = append(e.CRDDirectoryPaths, crds...) })
	ctx := context.Background()
	for _, u := range objs {
		if err := env.Client.Create(ctx, u.DeepCopy(), client.DryRunAll); err != nil {
			t.Errorf("%s %s is refused: %v", u.GetKind(), u.GetName(), err)
		}
		if u.GetKind() != "NodePool" {
			continue
		}
		if got, _, _ := unstructured.NestedString(u.Object, "spec", "template", "metadata", "labels", scheduling); got != "installed" {
			t.Errorf("the guide's NodePool declares %s=%q, want the Shim's scheduling label installed", scheduling, got)
		}
		labelled := u.DeepCopy()
		if err := unstructured.SetNestedField(labelled.Object, "installed", "spec", "template", "metadata", "labels", "shim.containerd.x-k8s.io/kata"); err != nil {
			t.Fatal(err)
		}
		err := env.Client.Create(ctx, labelled, client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), `label domain "k8s.io" is restricted`) {
			t.Errorf("a NodePool declaring the Shim's label: %v; the guide says Karpenter refuses it", err)
		}
	}
}

// moduleDir downloads module mod at the version hack/versions.env pins
// under key, and returns its directory in the module cache.
func moduleDir(t *testing.T, mod, key string) string {
	t.Helper()
	version, err := testutil.Version(key)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "mod", "download", "-json", mod+"@"+version)
	cmd.Dir, cmd.Env = t.TempDir(), append(os.Environ(), "GOFLAGS=")
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); err != nil || jerr != nil || info.Dir == "" {
		t.Fatalf("go mod download %s@%s: %v %s %s", mod, version, err, info.Error, out)
	}
	return info.Dir
}
