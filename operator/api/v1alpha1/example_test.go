package v1alpha1_test

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// A Shim for the Spin shim, rolled out to 10% of the wasm nodes at a time.
func ExampleShim() {
	maxUpdate := intstr.FromString("10%")
	shim := v1alpha1.Shim{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Shim"},
		ObjectMeta: metav1.ObjectMeta{Name: "spin-v2"},
		Spec: v1alpha1.ShimSpec{
			NodeSelector: map[string]string{"wasm": "true"},
			FetchStrategy: v1alpha1.FetchStrategy{Type: v1alpha1.FetchOCI, OCI: &v1alpha1.OCIFetch{
				Reference: "registry.example/shims/spin:v0.19.0",
			}},
			RuntimeClass:    v1alpha1.RuntimeClassSpec{Name: "wasmtime-spin-v2", Handler: "spin"},
			RolloutStrategy: &v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutRolling, Rolling: &v1alpha1.RollingUpdate{MaxUpdate: &maxUpdate}},
		},
	}
	out, _ := yaml.Marshal(shim)
	fmt.Print(string(out))
	// Output:
	// apiVersion: containerd.x-k8s.io/v1alpha1
	// kind: Shim
	// metadata:
	//   name: spin-v2
	// spec:
	//   fetchStrategy:
	//     oci:
	//       reference: registry.example/shims/spin:v0.19.0
	//     type: oci
	//   nodeSelector:
	//     wasm: "true"
	//   rolloutStrategy:
	//     rolling:
	//       maxUpdate: 10%
	//     type: rolling
	//   runtimeClass:
	//     handler: spin
	//     name: wasmtime-spin-v2
	// status:
	//   failedNodes: 0
	//   inProgressNodes: 0
	//   nodes: 0
	//   skippedNodes: 0
	//   updatedNodes: 0
}

// A rollout strategy for production: nightly windows in Berlin, one node
// then 10% then the rest, each step baked under the health gate, and a
// failure reverting to the previous revision.
func ExampleRolloutStrategy() {
	maxUpdate := intstr.FromString("10%")
	rs := v1alpha1.RolloutStrategy{
		Type:    v1alpha1.RolloutRolling,
		Rolling: &v1alpha1.RollingUpdate{MaxUpdate: &maxUpdate},
		Windows: []v1alpha1.MaintenanceWindow{{Days: []string{"Mon", "Tue", "Wed", "Thu"}, Start: "22:00", End: "04:00", TimeZone: "Europe/Berlin"}},
		Steps: []v1alpha1.RolloutStep{
			{Nodes: intstr.FromInt32(1), Bake: &metav1.Duration{Duration: 30 * time.Minute}},
			{Nodes: intstr.FromString("10%"), Bake: &metav1.Duration{Duration: 10 * time.Minute}},
			{Nodes: intstr.FromString("100%")},
		},
		OnFailure: v1alpha1.FailureRevert,
	}
	out, _ := yaml.Marshal(rs)
	fmt.Print(string(out))
	// Output:
	// onFailure: Revert
	// rolling:
	//   maxUpdate: 10%
	// steps:
	// - bake: 30m0s
	//   nodes: 1
	// - bake: 10m0s
	//   nodes: 10%
	// - nodes: 100%
	// type: rolling
	// windows:
	// - days:
	//   - Mon
	//   - Tue
	//   - Wed
	//   - Thu
	//   end: "04:00"
	//   start: "22:00"
	//   timeZone: Europe/Berlin
}
