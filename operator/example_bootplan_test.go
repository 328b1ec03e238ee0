package operator_test

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/operator"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// The plan a node image of a pool carries (shimkit-installer boot-units
// installs it before the runtime's first start): the operator's install
// plans for a node with the pool's labels, naming no node.
func ExampleBootPlan() {
	spin := &v1alpha1.Shim{
		ObjectMeta: metav1.ObjectMeta{Name: "spin", UID: "0b7c4f0e-8d1e-4c52-9a43-2f6b5e1d9c10"},
		Spec: v1alpha1.ShimSpec{
			NodeSelector: map[string]string{"pool": "wasm"},
			FetchStrategy: v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{
				Location: "https://artifacts.example/spin/containerd-shim-spin-v2.tar.gz", SHA256: strings.Repeat("0", 64),
			}},
			RuntimeClass: v1alpha1.RuntimeClassSpec{Name: "wasmtime-spin-v2", Handler: "spin"},
		},
	}
	pool := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"pool": "wasm", corev1.LabelArchStable: "arm64"}}}
	list, err := operator.BootPlan([]*v1alpha1.Shim{spin}, pool, operator.Options{})
	if err != nil {
		panic(err)
	}
	doc, err := plan.EncodeList(list) // the file boot-units' --plan names
	if err != nil {
		panic(err)
	}
	p := list.Items[0]
	fmt.Println(p.Shim.Name, p.Operation, p.Artifact.Platform, p.Handlers[0].Name, p.Node == "", len(doc) > 0)
	// Output: spin install linux/arm64 spin true true
}
