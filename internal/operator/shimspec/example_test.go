package shimspec_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shimkit/shimkit/installer/plan"
	"github.com/shimkit/shimkit/internal/operator/shimspec"
	"github.com/shimkit/shimkit/operator/api/v1alpha1"
)

// A Shim becomes the plan of one node, with the API's defaults applied.
func ExampleBuildPlan() {
	shim := &v1alpha1.Shim{
		ObjectMeta: metav1.ObjectMeta{Name: "spin", UID: "uid-1"},
		Spec: v1alpha1.ShimSpec{
			FetchStrategy: v1alpha1.FetchStrategy{Type: v1alpha1.FetchAnonHTTP, AnonHTTP: &v1alpha1.AnonHTTPFetch{
				Location: "https://artifacts.example/spin.tar.gz", SHA256: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			}},
			RuntimeClass: v1alpha1.RuntimeClassSpec{Name: "wasmtime-spin", Handler: "spin"},
		},
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{Architecture: "amd64", OperatingSystem: "linux"}}}
	p, err := shimspec.BuildPlan(shim, node, plan.OpInstall, shimspec.Settings{Namespace: "shimkit-system"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Node, p.Handlers[0].Name, p.Handlers[0].RuntimeType, p.Files[0].Path)
	fmt.Println(shimspec.Classes(shim)[0].Name, shimspec.Classes(shim)[0].Field)
	// Output:
	// node-1 spin io.containerd.spin.v2 containerd-shim-spin-v2
	// wasmtime-spin spec.runtimeClass.name
}

// A spec the CRD's rules let through can still be refused, naming the
// field: here a pull secret in another namespace than the operator's.
func ExampleRefusalOf() {
	shim := &v1alpha1.Shim{Spec: v1alpha1.ShimSpec{
		FetchStrategy: v1alpha1.FetchStrategy{Type: v1alpha1.FetchOCI, OCI: &v1alpha1.OCIFetch{
			Reference: "registry.example/spin:v3", PullSecretRef: &v1alpha1.SecretReference{Name: "creds", Namespace: "default"},
		}},
		RuntimeClass: v1alpha1.RuntimeClassSpec{Name: "wasmtime-spin", Handler: "spin"},
	}}
	ref := shimspec.RefusalOf(shim, shimspec.Settings{Namespace: "shimkit-system"})
	fmt.Println(ref.Reason)
	// Output:
	// PullSecretNamespace
}
