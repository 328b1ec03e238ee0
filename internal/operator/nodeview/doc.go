// Package nodeview is what a Shim sees of a node, from the Shim and the
// Node objects alone: whether the Shim's selector matches it (a
// control-plane node only when the selector names that label), whether it
// is eligible (Linux, a supported container runtime, an artifact for its
// platform, not an immutable host) or skipped and why (Skip), whether its
// image already has the shim, which runtime handlers its kubelet reports
// of the Shim's, and how an image reaches its installer. It also gives a
// Shim's spec hash, which names what a node has installed. The node view
// a reconcile decides on is made of these by package decide (NodeViewOf),
// which also skips a host its installer found read-only.
//
// It holds no client and reads no clock: every function is pure, so that
// the operator and `kubectl shimkit plan` see a node the same way.
package nodeview
