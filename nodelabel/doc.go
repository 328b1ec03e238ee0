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
//
// The records kept next to the label (a failure, the last verification)
// name the UID of the Shim object that wrote them, and RecordsOf reads
// them for one Shim object only: a Shim deleted and created again under the
// same name does not inherit its predecessor's failure, verification or
// label, and finds them stale (Records.Stale, Records.LabelledByOther). A
// label with no record beside it was not written by a Shim (a node pool
// declared it, say): RecordsOf says so (Records.Unrecorded), and the
// operator does not take it as an install.
package nodelabel
