// Package nodelabel marks the nodes that have a shim, without ever
// conflicting with the kubelet: every change is a JSON merge patch of
// metadata only, never a full Node update.
//
// A node with shim S installed carries the label
// shim.containerd.x-k8s.io/<S>=installed, which the RuntimeClass's
// nodeSelector matches, and the annotation of the same key holding the spec
// hash it was installed at. The label value stays "installed" through an
// upgrade, so pods keep scheduling onto nodes that still run the previous
// version. Shim names longer than a label name allows are shortened with a
// hash suffix, so keys stay valid and distinct.
package nodelabel
