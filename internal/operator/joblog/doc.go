// Package joblog keeps a copy of a failed installer run's log, so that
// kubectl shimkit logs shows it after the Job and its pod are gone.
//
// Guarantees:
//   - One copy per Shim and node, the node's last failed run: a
//     ConfigMap in the operator's namespace named by Name, labelled with
//     the Shim and the node, holding at most MaxBytes of the log's end
//     (a longer log is cut at a line, and says so).
//   - The copy is the Shim's (a controller reference to it, by UID): it
//     goes with the Shim, and Read never returns another object's copy
//     of the same name.
//   - Keep writes nothing when the pod's log cannot be read: the run's
//     failure stays recorded on the node either way.
package joblog
