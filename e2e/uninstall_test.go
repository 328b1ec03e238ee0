package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/nodelabel"
)

// nodeDirs are where an install writes on a node: the runtime's config,
// the shims' links, bundles and records, and systemd units.
var nodeDirs = []string{"/etc/containerd", "/usr/local/bin", "/opt/shimkit", "/var/lib/shimkit", "/etc/systemd/system"}

// snapshotNodes returns, for each node, every file under nodeDirs with
// the sha256 of its content (a symlink: its target).
func snapshotNodes(t *testing.T, nodes []testutil.ClusterNode) map[string]map[string]string {
	t.Helper()
	snap := map[string]map[string]string{}
	for _, n := range nodes {
		files := map[string]string{}
		for _, dir := range nodeDirs {
			root := n.Local(dir)
			err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				rel := strings.TrimPrefix(p, n.Root)
				if d.Type()&fs.ModeSymlink != 0 {
					target, err := os.Readlink(p)
					files[rel] = "-> " + target
					return err
				}
				data, err := os.ReadFile(p)
				sum := sha256.Sum256(data)
				files[rel] = hex.EncodeToString(sum[:])
				return err
			})
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
		}
		snap[n.Name] = files
	}
	return snap
}

// checkUninstalled checks that after the tutorial's end (the Shim deleted,
// shimkit uninstalled) every node's files are as before the install, no
// node keeps a label of shimkit, and nothing of the operator is left but
// its leader-election Lease.
func checkUninstalled(t *testing.T, c *testutil.Cluster, nodes []testutil.ClusterNode, before map[string]map[string]string) {
	t.Helper()
	after := snapshotNodes(t, nodes)
	for node, files := range before {
		for _, p := range slices.Sorted(mapKeys(files, after[node])) {
			if files[p] != after[node][p] {
				t.Errorf("node %s: %s was %q before the install, %q after the uninstall", node, p, files[p], after[node][p])
			}
		}
	}
	ctx := context.Background()
	for _, n := range nodes {
		node := &corev1.Node{}
		if err := c.Client.Get(ctx, client.ObjectKey{Name: n.Name}, node); err != nil {
			t.Fatal(err)
		}
		for k := range node.Labels {
			if strings.HasPrefix(k, nodelabel.Prefix) {
				t.Errorf("node %s: label %s left", n.Name, k)
			}
		}
	}
	for _, o := range []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "shimkit-operator"}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "shimkit-operator"}},
		&nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "wasmtime-spin-v2"}},
	} {
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(o), o); !apierrors.IsNotFound(err) {
			t.Errorf("%T %s left: %v", o, o.GetName(), err)
		}
	}
	waitFor(t, 60*time.Second, "the operator's pods to go", func() bool {
		pods := &corev1.PodList{}
		_ = c.Client.List(ctx, pods, client.InNamespace(releaseNamespace))
		return len(pods.Items) == 0
	})
	out := kubectl(t, c, "-n", releaseNamespace, "get",
		"deployments,replicasets,pods,jobs,serviceaccounts,roles,rolebindings,configmaps,secrets,services,leases", "-o", "name", "--ignore-not-found")
	for _, name := range strings.Fields(out) {
		switch name {
		case "serviceaccount/default", "configmap/kube-root-ca.crt", "lease.coordination.k8s.io/" + leaseName:
		default:
			t.Errorf("helm uninstall left %s in namespace %s", name, releaseNamespace)
		}
	}
	// As the page says, and waited for: the next scenario creates the
	// namespace again (its objects are refused while it terminates).
	kubectl(t, c, "delete", "namespace", releaseNamespace, "--ignore-not-found", "--timeout=120s")
}

// mapKeys is the union of the maps' keys.
func mapKeys(a, b map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range a {
			if !yield(k) {
				return
			}
		}
		for k := range b {
			if _, ok := a[k]; !ok && !yield(k) {
				return
			}
		}
	}
}
