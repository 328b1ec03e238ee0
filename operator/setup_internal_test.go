package operator

import (
	"context"
	"testing"

	"github.com/opencontainers/go-digest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/internal/operator/pin"
	"github.com/shimkit/shimkit/internal/testutil"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// TestRolesReadTheAPIServer: once SetupWithManager has the manager's API
// server reader, every role reads through it, not through the cache (the
// operator may only get Secrets, ConfigMaps and its Jobs' pods: a cached
// read would start an informer its RBAC refuses). Here the manager's cache
// is not started, so a cached read fails: a resolution that reads its
// pull secret succeeds only through the API server reader.
func TestRolesReadTheAPIServer(t *testing.T) {
	env := testutil.StartEnv(t, v1alpha1.AddToScheme)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shimkit-system"}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: ns.Name}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{}}`)}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	d := digest.FromString("spin")
	r, err := New(mgr.GetClient(), nil, Options{InstallerImage: "i", Namespace: ns.Name, ServerVersion: "v1.36.0",
		Resolver: pin.StaticResolver{"registry.example/spin:v1": d}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	shim := &v1alpha1.Shim{ObjectMeta: metav1.ObjectMeta{Name: "spin", UID: "uid-1"}, Spec: v1alpha1.ShimSpec{
		FetchStrategy: v1alpha1.FetchStrategy{Type: v1alpha1.FetchOCI, OCI: &v1alpha1.OCIFetch{Reference: "registry.example/spin:v1",
			PullSecretRef: &v1alpha1.SecretReference{Name: "creds"}}},
		RuntimeClass: v1alpha1.RuntimeClassSpec{Name: "spin", Handler: "spin"},
	}}
	p := r.resolve.Pin(ctx, shim, nodeview.SpecHash(shim))
	if p.Refusal != nil || p.Use == nil || p.Use.Digest != d.String() {
		t.Errorf("pin through the API server reader: %+v, %+v", p.Use, p.Refusal)
	}
}
