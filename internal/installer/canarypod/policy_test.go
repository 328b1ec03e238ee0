package canarypod

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/testutil"
)

// installerUser is the installer pods' identity (operator/config/rbac).
const installerUser = "system:serviceaccount:shimkit-system:shimkit-installer"

// TestAdmissionPolicy proves the admission policy the operator's manifests
// (and the chart) ship with the installer's ServiceAccount, on each
// Kubernetes release the tests run (the oldest supported, the newest): the
// canary pod the installer creates is admitted, and a pod of that
// ServiceAccount that is anything else is refused with the policy's
// message. Pods of other users are not its business.
func TestAdmissionPolicy(t *testing.T) {
	for _, rel := range testutil.KubeReleases() {
		t.Run(rel, func(t *testing.T) { testAdmissionPolicy(t, testutil.StartEnvOf(t, rel, nil)) })
	}
}

func testAdmissionPolicy(t *testing.T, env *testutil.Env) {
	ctx := context.Background()
	asInstaller, admin := installerPods(t, env)
	r := New(asInstaller, "node-a")
	canary := func() *corev1.Pod {
		return r.pod(plan.Canary{Handler: "spin", RuntimeClass: "shimkit-canary-spin", Namespace: "shimkit-system", Image: "registry.invalid/pause:3.10", Timeout: plan.Duration(time.Minute)})
	}
	// The policy is in force once the API server has loaded it: a pod it
	// refuses is refused.
	bad := canary()
	bad.Spec.HostNetwork = true
	deadline := time.Now().Add(time.Minute)
	for _, err := asInstaller.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), "no host namespace"); _, err = asInstaller.Create(ctx, bad) {
		if time.Now().After(deadline) {
			t.Fatalf("the policy refuses no hostNetwork pod of the installer after a minute: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	if _, err := asInstaller.Create(ctx, canary()); err != nil {
		t.Errorf("the installer's canary pod is refused: %v", err)
	}
	for _, tc := range []struct {
		name   string
		mutate func(*corev1.Pod)
		want   string
	}{
		{"no canary label", func(p *corev1.Pod) { delete(p.Labels, LabelCanary) }, "the installer creates canary pods only"},
		{"not pinned", func(p *corev1.Pod) { p.Spec.NodeName = "" }, "a canary pod is pinned to its node"},
		{"another RuntimeClass", func(p *corev1.Pod) { p.Spec.RuntimeClassName = nil }, "a canary pod uses a shimkit canary RuntimeClass"},
		{"a token", func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = nil }, "a canary pod has no ServiceAccount token"},
		{"another ServiceAccount", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "shimkit-operator" }, "a canary pod has no ServiceAccount token"},
		{"a volume", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
		}, "a canary pod mounts no volumes"},
		{"host PID", func(p *corev1.Pod) { p.Spec.HostPID = true }, "a canary pod uses no host namespace"},
		{"privileged", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		}, "a canary pod has one plain container"},
		{"an init container", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "first", Image: p.Spec.Containers[0].Image}}
		}, "a canary pod has one plain container"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := canary()
			tc.mutate(p)
			_, err := asInstaller.Create(ctx, p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("created as the installer: %v, want refused with %q", err, tc.want)
			}
			if _, err := admin.Create(ctx, p); err != nil {
				t.Errorf("created by another user: %v, want admitted", err)
			}
		})
	}
}

// installerPods applies the installer's manifests (its ServiceAccount,
// Role and admission policy) to env, with the namespace and canary
// RuntimeClass they need, and returns Pods as the installer and as the
// admin.
func installerPods(t *testing.T, env *testutil.Env) (asInstaller, admin *RESTPods) {
	t.Helper()
	ctx := context.Background()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shimkit-system"}}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "shimkit-canary-spin"}, Handler: "spin"}); err != nil {
		t.Fatal(err)
	}
	testutil.ApplyFile(t, env.Client, filepath.Join(testutil.RepoRoot(), "operator/config/rbac/installer.yaml"))
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: installerUser}
	asInstaller, err := NewRESTPods(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if admin, err = NewRESTPods(env.Config); err != nil {
		t.Fatal(err)
	}
	return asInstaller, admin
}
