// Package operator is the reference Shim controller: it reconciles Shim
// resources (containerd.x-k8s.io/v1alpha1) by running the installer as one
// Job per node, rolling under the Shim's rollout strategy, labelling nodes
// that have the shim, and publishing the RuntimeClass that schedules onto
// them. Another operator can add it to its own manager with
// Reconciler.SetupWithManager.
//
// # Lifecycle
//
// Install: the matching nodes (spec.nodeSelector; control-plane nodes only
// when the selector names node-role.kubernetes.io/control-plane) that lack
// the current spec hash are handed to rollout.Planner, which limits them to
// maxUpdate, counting Jobs in flight. A node installed at an older hash is
// an upgrade. When a node's Job succeeds, the node gets the shim's label
// (package nodelabel) and counts as updated; when one fails, the Shim is
// Degraded and no new node starts until the failure is resolved (delete
// the failed Job to retry) or the spec changes. The RuntimeClass is applied
// once the first node has the shim, scheduling only onto labelled nodes.
// Requeues continue until every node is done; then Ready is True.
//
// Nodes that join and match are installed; nodes that stop matching are
// uninstalled.
//
// Uninstall: a finalizer keeps a deleted Shim until every labelled node was
// uninstalled, rolling under the same strategy (install Jobs still running
// finish first). A node's label turns to "uninstalling" before its Job
// starts, so no new pod lands there; the label goes when the Job succeeds.
// Then the RuntimeClass is deleted and the finalizer removed.
//
// Jobs are named from the shim, the node and the spec hash, length-safe
// with a hash suffix, and owned by the Shim, so an operator that restarts
// finds its Jobs again: it never duplicates one nor exceeds maxUpdate.
package operator
