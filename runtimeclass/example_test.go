package runtimeclass_test

import (
	"encoding/json"
	"fmt"

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
