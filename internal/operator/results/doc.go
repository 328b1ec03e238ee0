// Package results reads what the operator's installer Jobs report: each
// Job's plan.NodeResult from its pods (the installer's termination
// message), and the image pulls the kubelet failed for a running Job.
//
// It guarantees that a finished Job's pods are read once (its failure is
// then reported once), read ahead of the reconcile when a Job completes
// (Prefetching: the read leaves the path between a Job's completion and
// the node's label), and forgotten with the Job or the Shim (Keep); a
// read that fails is not fatal to a reconcile: the Job's condition stands
// in, and its pods are read again next time.
package results
