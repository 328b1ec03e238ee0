package pin_test

import (
	"context"
	"fmt"

	"github.com/opencontainers/go-digest"

	"github.com/shimkit/shimkit/internal/operator/pin"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// A tag is pinned to the digest it names now; every node of the rollout
// installs that digest, whatever the tag names later.
func ExampleStaticResolver() {
	r := pin.StaticResolver{"registry.example/shims/spin:v0.19": digest.Digest("sha256:" + fmt.Sprintf("%064d", 7))}
	res, err := r.Resolve(context.Background(), pin.Input{Fetch: v1alpha1.FetchStrategy{
		Type: v1alpha1.FetchOCI, OCI: &v1alpha1.OCIFetch{Reference: "registry.example/shims/spin:v0.19"},
	}})
	fmt.Println(res.Digest[:15], err)
	// Output: sha256:00000000 <nil>
}
