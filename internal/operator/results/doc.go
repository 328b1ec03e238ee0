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
//
// It keeps a copy of a failed installer run's log (KeepLog), so that
// kubectl shimkit logs shows it after the Job and its pod are gone:
//   - one copy per Shim and node, the node's last failed run: a ConfigMap
//     in the operator's namespace named by LogName, labelled with the Shim
//     and the node, holding at most LogMaxBytes of the log's end (a longer
//     log is cut at a line, and says so);
//   - the copy is the Shim's (a controller reference to it, by UID): it
//     goes with the Shim, and ReadLog never returns another object's copy
//     of the same name;
//   - KeepLog writes nothing when the pod's log cannot be read: the run's
//     failure stays recorded on the node either way.
package results
