// Package plugin is kubectl shimkit, a kubectl plugin (installed as
// kubectl-shimkit on the PATH, as krew installs plugins) that shows what
// the operator sees and would do, writing nothing:
//
//	kubectl shimkit status NAME [-o wide|json|yaml]
//	kubectl shimkit plan (NAME | -f shim.yaml) [-o json|yaml]
//
// status is a row per node of the Shim: its container runtime, its state
// as the rollout counts it, the revision and digest it has, since when,
// and why it failed or is skipped (package report).
//
// plan reads the cluster once (the Shim, the nodes, the operator's Jobs,
// the RuntimeClasses) and decides as the operator's reconcile decides
// (operator.PreviewRollout: decide.Decide, wave after wave): which nodes
// change in the first wave, then the next ones under maxUpdate and the
// steps, when a window opens, which nodes are skipped and why, what
// becomes of the RuntimeClasses, and a spec the operator refuses. With
// -f, the file's spec is first checked by the API server (a server-side
// dry run: the CRD's schema and rules) and takes the live Shim's identity
// and status when it exists: the plan is that of applying the file.
package plugin
