// Package plan is the one contract between the cluster side and a node: a
// NodePlan says what to install on (or remove from, or verify on) one
// node, and a NodeResult says what the installer did or found and, when
// it failed, why.
//
// The operator builds a NodePlan from a Shim in one function; the installer
// reads the same document from a file, so an image builder or an admin can
// run exactly what the operator would, offline. Both are JSON documents with
// apiVersion and kind, validated on both sides; an installer refuses a plan
// of another apiVersion (ErrVersion) instead of guessing.
//
// # Guarantees
//
//   - The package imports only the standard library: the operator links no
//     node-side code by importing it, and node-side code imports nothing
//     cluster-side.
//   - Decode rejects unknown fields and validates, naming the offending
//     field (handlers[1].runtimeType, files[0].path, ...).
//   - Handler options and settings keep their TOML types across JSON:
//     whole numbers decode as int64, others as float64.
//   - Failure reasons are a fixed set of exported Reason constants (as
//     containerd's errdefs) that survive the process boundary: the installer
//     writes them into its termination message, the operator copies them
//     into the Shim's status and Events unchanged.
//   - A verify plan (OpVerify) is the install plan of the Shim's current
//     spec under another operation, validated by the same rules; it
//     changes nothing on the node and fetches nothing. Its NodeResult is
//     Succeeded when the verification ran, with Drift listing every
//     mismatch between the node, the Shim's last install record and the
//     plan (the spec hash, the pinned digest, a bundle file missing or of
//     other bytes, a handler missing from containerd's config, ...); no
//     Drift: the node is exactly as recorded. Failed (with a Reason) only
//     when the plan is refused or the node could not be read. An install
//     of the same spec lists in Drift what it found drifted and repaired.
//   - A NodeResult encoded with EncodeResult always fits the kubelet's
//     4096-byte termination message: the file list, then the drift (its
//     first entries kept, and "… and N more"), then the message are
//     shortened, never the outcome, reason or digest.
//   - A plan may name the node's container runtime (runtime: "containerd"
//     or "cri-o"; omitted: the installer detects it, so plans written
//     before CRI-O mean what they meant); any other value is refused
//     naming the field. An installer from before the field refuses a plan
//     that sets it (an unknown field), never installing into the wrong
//     runtime; a plan that omits it reads the same to both. Handlers are written in containerd's terms on
//     both: on CRI-O an OCI runtime under containerd's runc shim
//     (options.BinaryName) is an oci handler, any other runtime type a vm
//     handler of its runtimePath, and settings carry CRI-O's
//     allowed_annotations and container_min_memory.
//   - A NodePlanList carries install plans (never uninstall or verify
//     plans) of different Shims for one node, carried out by one installer
//     run with one containerd restart; its NodeResultList (EncodeResults)
//     has one result per plan, in order, and fits the same 4096 bytes.
//     When one plan's step fails, that result has the real reason and
//     every other ReasonSiblingFailed: all were rolled back together.
//     DecodePlans and DecodeResults read either form.
//
// # How the plan reaches a node
//
// The operator puts the plan into an annotation of the installer Job's pod
// template and mounts it as a file with the downward API. The plan then
// lives and dies with the Job that runs it: no second object to create,
// garbage-collect or grant RBAC for, nothing that can change under a running
// Job (a pod's annotation volume reflects the pod it belongs to), and
// `kubectl get job -o yaml` shows exactly what a node was told to do.
//
// # Bundle paths
//
// A Shim's files are placed in a per-Shim, per-version directory on the node
// and switched atomically. Handler options, handler runtime paths,
// sandboxer commands and files marked Substitute refer to that directory
// through BundleDirPlaceholder, which the installer replaces with the
// absolute node path of the Shim's current bundle.
package plan
