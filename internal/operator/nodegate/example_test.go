package nodegate_test

import (
	"fmt"
	"time"

	"github.com/shimkit/shimkit/internal/operator/nodegate"
)

// One installer per node, across Shims: a node held by one Shim's Job is
// refused to another until it is released.
func ExampleGate_Acquire() {
	g := nodegate.New(0, 0)
	now := time.Now()
	fmt.Println(g.Acquire("node-1", "spin", "spin-node-1-install", nil, now))
	fmt.Println(g.Acquire("node-1", "gvisor", "gvisor-node-1-install", nil, now))
	g.Release("node-1", "spin-node-1-install")
	fmt.Println(g.Acquire("node-1", "gvisor", "gvisor-node-1-install", nil, now))
	// Output:
	// true
	// false
	// true
}
