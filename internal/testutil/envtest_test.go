package testutil_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"

	"github.com/shimkit/shimkit/internal/testutil"
)

// TestEnvtestHarness proves the envtest binaries built from the Go module
// proxy run: the API server reports the pinned version and serves writes.
func TestEnvtestHarness(t *testing.T) {
	env := testutil.StartEnv(t)
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	info, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := testutil.Version("KUBE_VERSION")
	if info.GitVersion != want {
		t.Errorf("kube-apiserver reports %q, want %q", info.GitVersion, want)
	}
	ctx := context.Background()
	for i := range 3 {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i)}}
		if err := env.Client.Create(ctx, node); err != nil {
			t.Fatal(err)
		}
	}
	var nodes corev1.NodeList
	if err := env.Client.List(ctx, &nodes); err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 3 {
		t.Errorf("listed %d nodes, want 3", len(nodes.Items))
	}
}
