package runtimeclass_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shimkit/shimkit/nodelabel"
	"github.com/shimkit/shimkit/runtimeclass"
)

func ExampleBuild() {
	rc := runtimeclass.Build(runtimeclass.Spec{
		Name: "wasmtime-spin", Handler: "spin",
		NodeSelector: map[string]string{nodelabel.Key("spin"): nodelabel.Installed},
	})
	out, _ := json.Marshal(rc)
	fmt.Println(string(out))
	// Output: {"kind":"RuntimeClass","apiVersion":"node.k8s.io/v1","metadata":{"name":"wasmtime-spin"},"handler":"spin","scheduling":{"nodeSelector":{"shim.containerd.x-k8s.io/spin":"installed"}}}
}

// Ensure publishes the RuntimeClass that an object of the embedding
// operator owns, and refuses one that an admin created.
func ExampleEnsure() {
	ctx := context.Background()
	// An admin already has a RuntimeClass "runc-legacy"; the client is the
	// manager's in an operator.
	c := fake.NewClientBuilder().WithObjects(&nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "runc-legacy"}, Handler: "runc",
	}).Build()
	owner := &metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "WasmRuntime", Name: "spin", UID: "4f9a2c1e"}

	for _, name := range []string{"wasmtime-spin", "runc-legacy"} {
		res, err := runtimeclass.Ensure(ctx, c, runtimeclass.Spec{
			Name: name, Handler: "spin", Owner: owner,
			NodeSelector: map[string]string{nodelabel.Key("spin"): nodelabel.Installed},
		})
		var conflict *runtimeclass.ConflictError
		switch {
		case errors.As(err, &conflict):
			// Someone else's: report it (a condition, an Event), never take it over.
			fmt.Printf("%s: not ours, %s\n", conflict.Name, conflict.Holder())
		case err != nil:
			fmt.Println(err) // requeue
		case res == runtimeclass.Retry:
			fmt.Println(name, "changed meanwhile: ensure again") // requeue
		default:
			fmt.Println(name, res)
		}
	}
	// Output:
	// wasmtime-spin Created
	// runc-legacy: not ours, it has no controller
}

// A controller that reads its snapshot first decides on what it read,
// then writes with that read's preconditions (Apply); a RuntimeClass of
// someone else is a conflict, and nothing is written.
func ExampleDecide() {
	owner := &metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "WasmRuntime", Name: "spin", UID: "uid-spin"}
	s := runtimeclass.Spec{Name: "wasmtime-spin", Handler: "spin", Owner: owner}
	st, err := runtimeclass.Decide(nil, s, true)
	fmt.Println(st.Result, err)
	admins := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "wasmtime-spin"}, Handler: "spin"}
	st, err = runtimeclass.Decide(admins, s, true)
	fmt.Println(st.Result, st.Write == nil, errors.Is(err, runtimeclass.ErrConflict))
	// Output:
	// Created <nil>
	// Unchanged true true
}
