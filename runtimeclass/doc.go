// Package runtimeclass publishes the RuntimeClass of a shim. The
// RuntimeClass names the containerd handler and schedules its pods only onto
// nodes that have the shim (scheduling.nodeSelector on the shim's node
// label, see package nodelabel), with the tolerations those nodes need.
//
// Apply uses server-side apply with the field owner "shimkit", so it
// updates the RuntimeClass whenever the spec changes (not only creates it),
// and fields other managers set are left alone. RuntimeClass.handler is
// immutable in Kubernetes; the Shim API makes its handler immutable too.
package runtimeclass
