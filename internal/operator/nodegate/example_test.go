package nodegate_test

import (
	"fmt"
	"time"

	"github.com/shimkit/shimkit/internal/operator/nodegate"
)

// One installer per node, across Shims: a node held by one Shim's Job is
// refused to another until it is released.
func ExampleGate_Reserve() {
	g := nodegate.New(0, 0)
	now := time.Now()
	fmt.Println(g.Reserve(nodegate.Reservation{Node: "node-1", Shim: "spin", Job: "spin-node-1-install"}, now))
	fmt.Println(g.Reserve(nodegate.Reservation{Node: "node-1", Shim: "gvisor", Job: "gvisor-node-1-install"}, now))
	g.Release("node-1", "spin-node-1-install")
	fmt.Println(g.Reserve(nodegate.Reservation{Node: "node-1", Shim: "gvisor", Job: "gvisor-node-1-install"}, now))
	// Output:
	// true
	// false
	// true
}
