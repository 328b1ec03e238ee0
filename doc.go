// Package shimkit is a library of building blocks for the lifecycle of
// containerd shims on Kubernetes, plus a reference operator and a reference
// node installer built from them.
//
// Installing a shim on a node means: fetch a binary, register it as a runtime
// handler in the containerd config, restart containerd, check that it came
// back healthy (or roll back), label the node, and publish a RuntimeClass that
// schedules only onto labelled nodes. Each of those steps is its own package
// with a small interface, so other operators and image-building tools can take
// just the piece they need.
//
// Data flows one way:
//
//	cluster side:  rollout + nodelabel + runtimeclass  →  operator
//	                                                         │ one Job per node
//	node side:     installer  →  fetch, containerdconfig, Restarter
//
// On the node, package fetch downloads and verifies the shim artifact (HTTP,
// OCI or a local file), package containerdconfig registers the runtime handler
// without losing a byte of the user's configuration and can roll the change
// back, and package installer composes them with a Restarter that restarts
// containerd through systemd and checks its health over CRI.
//
// In the cluster, package rollout decides which nodes change next under the
// Shim's rollout strategy (it is pure: no client), package nodelabel marks
// nodes that have the shim, package runtimeclass publishes the RuntimeClass,
// and package operator reconciles the Shim resource
// (containerd.x-k8s.io/v1alpha1) by creating one installer Job per node.
//
// Node-side packages never import cluster-side ones, so an image builder can
// embed containerdconfig or fetch offline, with no cluster and no restart.
package shimkit
