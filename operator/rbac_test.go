package operator_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
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
		applyYAML(t, env.Client, filepath.Join(testutil.RepoRoot(), "operator/config/rbac", f))
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

func applyYAML(t *testing.T, c client.Client, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := c.Create(context.Background(), u); err != nil {
			t.Fatalf("%s: create %s %s: %v", path, u.GetKind(), u.GetName(), err)
		}
	}
}
