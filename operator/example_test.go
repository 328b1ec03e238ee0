package operator_test

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/shimkit/shimkit/operator"
)

// Add the Shim reconciler to an existing manager (whose scheme has the
// v1alpha1 and core types).
func ExampleReconciler_SetupWithManager() {
	var mgr ctrl.Manager // your operator's manager
	if mgr == nil {
		return
	}
	r, err := operator.New(mgr.GetClient(), mgr.GetEventRecorder("shims"), operator.Options{
		InstallerImage: "registry.example/shimkit-installer:v0.1.0",
		Namespace:      "shimkit-system",
	})
	if err != nil {
		panic(err)
	}
	if err := r.SetupWithManager(mgr); err != nil {
		panic(err)
	}
	// Output:
}
