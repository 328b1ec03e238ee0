// Package nodeview is what a Shim sees of a node, from the Shim and the
// Node objects alone: whether the Shim's selector matches it (a
// control-plane node only when the selector names that label), whether it
// is eligible (Linux, a supported container runtime, an artifact for its
// platform, not a read-only or immutable host) or skipped and why,
// whether its image already has the shim, how an image reaches its
// installer, and the fleet.NodeView a reconcile decides on (View). It
// also gives a Shim's spec hash, which names what a node has installed.
//
// It holds no client and reads no clock: every function is pure, so that
// the operator and `kubectl shimkit plan` see a node the same way.
package nodeview
