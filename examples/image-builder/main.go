// Command image-builder registers a containerd runtime handler in a root
// filesystem offline, the way node-image tooling (for example Cluster API's
// image-builder) bakes shims into a VM image: no cluster, no containerd
// running, no restart.
//
//	image-builder -root /mnt/image -name spin -runtime-type io.containerd.spin.v2 \
//	    -runtime-path /usr/local/bin/containerd-shim-spin-v2 -option SystemdCgroup=true
//	image-builder -root /mnt/image -name spin -remove
package main

import (
	"context"
	"fmt"
	"os"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "image-builder:", err)
		os.Exit(1)
	}
}
