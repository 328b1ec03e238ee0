// Package operator is the reference Shim controller: it reconciles Shim
// resources (containerd.x-k8s.io/v1alpha1) by running the installer as one
// Job per node, rolling under the Shim's rollout strategy, labelling nodes
// that have the shim, and publishing the RuntimeClasses that schedule onto
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
// the failed Job to retry) or the spec changes. The RuntimeClasses are
// applied once the first node has the shim, scheduling only onto labelled
// nodes. Requeues continue until every node is done; then Ready is True.
//
// Nodes that join and match are installed; nodes that stop matching are
// uninstalled.
//
// Uninstall: a finalizer keeps a deleted Shim until every labelled node was
// uninstalled, rolling under the same strategy (install Jobs still running
// finish first). A node's label turns to "uninstalling" before its Job
// starts, so no new pod lands there; the label goes when the Job succeeds.
// Then the RuntimeClasses are deleted and the finalizer removed.
//
// Jobs are named from the shim, the node and the spec hash, length-safe
// with a hash suffix, and owned by the Shim, so an operator that restarts
// finds its Jobs again: it never duplicates one nor exceeds maxUpdate.
//
// # Handlers and RuntimeClasses
//
// A Shim registers its primary handler (spec.runtimeClass with the
// top-level runtime fields) and every one of spec.handlers, each with its
// own RuntimeClass. A Shim has one node label: all its handlers are
// installed, upgraded and removed together, by one installer run per node,
// so every RuntimeClass of a Shim selects the same nodes. Ready requires
// all of them to be published; a handler dropped from the spec loses its
// RuntimeClass at once (no new pod asks for it), and on delete they all go
// last, after every node is clean.
//
// # The node plan and the node's result
//
// BuildPlan turns a Shim into the plan.NodePlan of one node, applying
// every default of the Shim API in one place (handlers, files, runtime
// paths, sandboxers, the artifact of the node's platform). The Job carries
// the plan as JSON in its pod template's annotation PlanAnnotation,
// mounted through the downward API as the file its args name
// (shimkit-installer install --plan /etc/shimkit/plan/plan.json ...): no
// environment variable, no second object to create or clean up, and
// `kubectl get job -o yaml` shows what the node was told. A node the Shim
// has no artifact for (only per-platform artifacts, none of its platform)
// fails without a Job, as ArtifactInvalid.
//
// The installer writes its plan.NodeResult as the container's termination
// message. For a finished Job the operator reads it from the Job's newest
// pod (one list per Job, from the API server, so no pod cache), and a failed
// node's reason and message (ConfigInvalid: /etc/containerd/config.toml:12:
// ...) go into status.failingNodes, the Degraded condition and a Warning
// Event; without a readable result, the Job's failed condition stands in.
// Exit codes 3 (rolled back) and 4 (rollback failed) fail the Job at once;
// others are retried up to Options.JobBackoffLimit.
package operator
