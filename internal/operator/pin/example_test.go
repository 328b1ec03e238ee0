package pin_test

import (
	"context"
	"fmt"

	"github.com/opencontainers/go-digest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shimkit/shimkit/internal/operator/nodeview"
	"github.com/shimkit/shimkit/internal/operator/pin"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// A tag is pinned to the digest the registry (here an in-memory resolver)
// answers; the status shows it, and every node installs it.
func ExamplePinner_Pin() {
	d := digest.FromString("spin v3")
	p := pin.New(nil, pin.StaticResolver{"registry.example/spin:v3": d}, "shimkit-system", 0)
	shim := &v1alpha1.Shim{
		ObjectMeta: metav1.ObjectMeta{Name: "spin", UID: "uid-1"},
		Spec: v1alpha1.ShimSpec{
			FetchStrategy: v1alpha1.FetchStrategy{Type: v1alpha1.FetchOCI, OCI: &v1alpha1.OCIFetch{Reference: "registry.example/spin:v3"}},
			RuntimeClass:  v1alpha1.RuntimeClassSpec{Name: "wasmtime-spin", Handler: "spin"},
		},
	}
	pinned := p.Pin(context.Background(), shim, nodeview.SpecHash(shim))
	fmt.Println(pinned.Use.Source, pinned.Use.Digest == d.String(), pinned.Refusal == nil)
	// Output:
	// registry.example/spin:v3 true true
}
