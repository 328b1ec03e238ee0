package operator_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestRBACIsEnough runs the operator as its ServiceAccount with only the
// shipped RBAC (operator/config/rbac): a whole install and uninstall must
// go through, so the manifests list every verb the reconciler uses.
func TestRBACIsEnough(t *testing.T) {
	env := startCluster(t)
	ctx := context.Background()
	for _, f := range []string{"service_account.yaml", "role.yaml", "role_binding.yaml", "leader_election_role.yaml"} {
		testutil.ApplyFile(t, env.Client, filepath.Join(testutil.RepoRoot(), "operator/config/rbac", f))
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:shimkit-system:shimkit-operator"}
	createNodes(t, env.Client, 3, nil, "n")
	startKubelet(t, env, 50*time.Millisecond, nil)
	startOperatorAs(t, env, cfg)

	if err := env.Client.Create(ctx, newShim("spin", "spin", "2", nil)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "Ready as the ServiceAccount", ready(env.Client, "spin"))
	if err := env.Client.Delete(ctx, getShim(t, env.Client, "spin")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the Shim removed as the ServiceAccount", func() (bool, string) {
		err := env.Client.Get(ctx, client.ObjectKey{Name: "spin"}, &v1alpha1.Shim{})
		return apierrors.IsNotFound(err), ""
	})
	// And the ServiceAccount is not cluster-admin: it cannot read Secrets.
	sa, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := sa.List(ctx, &corev1.SecretList{}); !apierrors.IsForbidden(err) {
		t.Errorf("listing Secrets as the operator: %v, want forbidden", err)
	}
}

// TestShimRightsAggregateToNoRole: the right to create or change a Shim is
// root on every node it selects (it names a binary, a config and a unit
// that run as root there), so no shipped role aggregates it into a
// built-in role (admin, edit, view): only those an admin grants it have it.
func TestShimRightsAggregateToNoRole(t *testing.T) {
	for _, dir := range []string{"operator/config", "charts/shimkit/templates"} {
		err := filepath.WalkDir(filepath.Join(testutil.RepoRoot(), dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if bytes.Contains(data, []byte("rbac.authorization.k8s.io/aggregate-to-")) {
				t.Errorf("%s aggregates into a built-in role", path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
