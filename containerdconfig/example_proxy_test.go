package containerdconfig_test

import (
	"fmt"
	"log"

	"github.com/shimkit/shimkit/containerdconfig"
)

// Register a sandboxer shim: its sandbox controller daemon as a proxy
// plugin, and a handler whose pods that daemon serves.
func ExampleAddProxyPlugin() {
	orig := []byte("version = 3\n")
	out, _, err := containerdconfig.AddProxyPlugin("config.toml", orig, containerdconfig.ProxyPlugin{
		Name: "vmm", Type: "sandbox", Address: "/run/vmm-sandboxer.sock",
	})
	if err != nil {
		log.Fatal(err)
	}
	out, _, err = containerdconfig.AddHandler("config.toml", out, containerdconfig.RuntimeHandler{
		Name: "kuasar-vmm", RuntimeType: "io.containerd.kuasar-vmm.v1", Sandboxer: "vmm", IOType: "streaming",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(out[len(orig):]))
	// Output:
	//
	// # >>> shimkit: proxy plugin "vmm" (managed by shimkit; do not edit) >>>
	// [proxy_plugins.vmm]
	//   type = "sandbox"
	//   address = "/run/vmm-sandboxer.sock"
	// # <<< shimkit: proxy plugin "vmm" <<<
	//
	// # >>> shimkit: runtime handler "kuasar-vmm" (managed by shimkit; do not edit) >>>
	// [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.kuasar-vmm]
	//   runtime_type = "io.containerd.kuasar-vmm.v1"
	//   sandboxer = "vmm"
	//   io_type = "streaming"
	// # <<< shimkit: runtime handler "kuasar-vmm" <<<
}
