package crioconfig_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/shimkit/shimkit/crioconfig"
)

// A Shim's crun with Wasm support as an oci handler, written into a node's
// root filesystem: the drop-in is checked, written and committed; CRI-O
// must then be restarted (never sent SIGHUP) and the handler looked for in
// its CRI status.
func Example() {
	root, _ := os.MkdirTemp("", "node-")
	defer os.RemoveAll(root)
	crun := filepath.Join(root, "opt/shimkit/bin/crun")
	_ = os.MkdirAll(filepath.Dir(crun), 0o755)
	_ = os.WriteFile(crun, []byte("#!/bin/sh\n"), 0o755)

	w := crioconfig.NewWriter(crioconfig.Target{Root: root}, "shim/wasm")
	change, err := w.Install(context.Background(), crioconfig.RuntimeHandler{
		Name:               "crun-wasm",
		Kind:               crioconfig.KindOCI,
		RuntimePath:        "/opt/shimkit/bin/crun",
		AllowedAnnotations: []string{"module.wasm.image/variant"},
		ContainerMinMemory: "4MiB",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(change.Changed(), change.Files())
	if err := change.Commit(); err != nil {
		fmt.Println(err)
	}

	// A vm handler's binary must be a containerd shim v2.
	_, err = w.Install(context.Background(), crioconfig.RuntimeHandler{Name: "kata", Kind: crioconfig.KindVM, RuntimePath: "/opt/kata/bin/kata-runtime"})
	fmt.Println(crioconfig.Reason(err))
	// Output:
	// true [/etc/crio/shimkit/crun-wasm.owner.json /etc/crio/crio.conf.d/90-shimkit-crun-wasm.conf]
	// InvalidHandler
}
