// Package record reads what shimkit leaves on a Node for a shim, without a
// client: the label and annotation keys (Key, FailureKey, VerifiedKey), the
// installed state (State), and the records kept next to the label (a
// Failure, the last Verification), each naming the UID of the Shim object
// that wrote it.
//
// It is the read side of package nodelabel, which writes these keys; it
// depends on the Kubernetes API types only, so that pure code (the
// operator's decisions, package decide) can read a node's records.
//
// RecordsOf reads the records of one Shim object only: a Shim deleted and
// created again under the same name does not inherit its predecessor's
// failure, verification or label, and finds them stale (Records.Stale,
// Records.LabelledByOther).
package record
