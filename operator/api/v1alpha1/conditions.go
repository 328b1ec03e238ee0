package v1alpha1

import "slices"

// Condition types of a Shim.
const (
	ConditionReady       = "Ready"
	ConditionProgressing = "Progressing"
	ConditionDegraded    = "Degraded"
	// ConditionReconciling is kstatus's (sigs.k8s.io/cli-utils): True
	// while the operator works towards the spec. kstatus then computes
	// InProgress.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is kstatus's: True when the operator can make no
	// progress until the spec or the cluster changes. kstatus then
	// computes Failed. With both False, kstatus computes Current exactly
	// when Ready is True.
	ConditionStalled = "Stalled"
)

// Reasons of the Ready condition.
const (
	// ReasonRolledOut: every eligible node has the current spec and every
	// RuntimeClass is published.
	ReasonRolledOut = "RolledOut"
	// ReasonRollingOut: nodes are still to be installed or upgraded.
	ReasonRollingOut = "RollingOut"
	// ReasonNoNodes: no eligible node matches the selector, so no
	// RuntimeClass is published.
	ReasonNoNodes = "NoNodes"
	// ReasonDeleting: the Shim is being removed from its nodes.
	ReasonDeleting = "Deleting"
	// ReasonHandlerInUse: the Shim is being deleted, and its removal waits
	// on some nodes for the pods that run with its handlers (the message
	// names the nodes and the pods): a handler, its binary and its bundle
	// stay while a pod uses them.
	ReasonHandlerInUse = "HandlerInUse"
	// ReasonDrainBlocked: a node's drain (rolloutStrategy.disruption
	// Drain) did not empty it within its timeout; the message names the
	// pods left and the PodDisruptionBudget that keeps each. The node was
	// not changed, and was uncordoned.
	ReasonDrainBlocked = "DrainBlocked"
)

// Reasons of the Progressing condition.
const (
	ReasonNodesChanging = "NodesChanging"
	// ReasonHalted: a node failed, or the spec is refused; no new node
	// starts until that is resolved.
	ReasonHalted = "Halted"
	ReasonIdle   = "Idle"
)

// Reasons of the Degraded condition (Ready is False with the same reason
// when it keeps the Shim from being ready). Each one is a refusal: the
// operator changed nothing that the reason names.
const (
	ReasonNoFailures = "NoFailures"
	// ReasonNodeFailed: a node's installer failed; status.failingNodes
	// has each node's own reason (the installer's: Conflict, Reserved,
	// ConcurrentEdit, ConfigInvalid, ...).
	ReasonNodeFailed = "NodeFailed"
	// ReasonRuntimeClassConflict: a RuntimeClass the spec names exists
	// and belongs to someone else (no controller reference to this Shim).
	// It is left exactly as it is, and never deleted with the Shim.
	ReasonRuntimeClassConflict = "RuntimeClassConflict"
	// ReasonPullSecretNamespace: spec.fetchStrategy.oci.pullSecretRef
	// names a namespace other than the operator's, where the installer
	// Jobs run and from where alone they can mount a Secret. No node is
	// installed.
	ReasonPullSecretNamespace = "PullSecretNamespace"
	// ReasonReservedRuntimeType: a handler names a runtime type of
	// containerd's own shims without runtimeOptions.BinaryName (see
	// ReservedRuntimeTypes). No node is installed.
	ReasonReservedRuntimeType = "ReservedRuntimeType"
	// ReasonInvalidSpec: the spec passed the API server's validation but
	// cannot be turned into a node plan (the message names the field). No
	// node is installed.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonResolveFailed: the artifact could not be resolved to a digest
	// (the registry or URL failed, refused the credentials, or has no
	// such artifact). No node starts an install until it is.
	ReasonResolveFailed = "ResolveFailed"
	// ReasonSignatureMissing: spec.verification is set and the resolved
	// digest has no signature. No node is installed.
	ReasonSignatureMissing = "SignatureMissing"
	// ReasonSignatureInvalid: signatures were found, and none verifies
	// with spec.verification's keys or identity. No node is installed.
	ReasonSignatureInvalid = "SignatureInvalid"
	// ReasonInsecureTransport: the artifact would travel over plain HTTP
	// from a registry that is neither loopback nor cluster-local (without
	// oci.insecure), or a download was redirected from https to http. No
	// node is installed.
	ReasonInsecureTransport = "InsecureTransport"
)

// Reasons of the Reconciling condition, besides NodesChanging, Deleting
// and ResolveFailed (True: resolved again at each resync) and RolledOut
// (False: nothing left to do).
const (
	// ReasonRuntimeClassPending: every node has the current spec and a
	// RuntimeClass is still to be published (it changed while it was
	// written; the next reconcile publishes it).
	ReasonRuntimeClassPending = "RuntimeClassPending"
	// ReasonStalled: Reconciling is False because the Shim is stalled;
	// the Stalled condition says why.
	ReasonStalled = "Stalled"
	// ReasonPaused: spec.rolloutStrategy.paused; no node starts.
	ReasonPaused = "Paused"
	// ReasonWaitingForWindow: the nodes left run workloads and no
	// maintenance window is open; status.rollout.nextWindow says when one
	// opens.
	ReasonWaitingForWindow = "WaitingForWindow"
	// ReasonBaking: the current step's nodes are updated and bake until
	// status.rollout.bakeUntil, watched by the health gate.
	ReasonBaking = "Baking"
	// ReasonReverting: the nodes updated go back to the previous revision
	// (onFailure: Revert).
	ReasonReverting = "Reverting"
)

// Reasons of the Degraded condition a rollout's health gate or failure
// policy sets (besides NodeFailed).
const (
	// ReasonWorkloadFailures: workload pods of the Shim's RuntimeClasses
	// failed on updated nodes beyond spec.rolloutStrategy.healthGate; the
	// message names the pods and nodes. The rollout halts until the spec
	// changes.
	ReasonWorkloadFailures = "WorkloadFailures"
	// ReasonReverted: the rollout failed and its nodes went back to the
	// previous revision; it stays so until the spec changes.
	ReasonReverted = "Reverted"
)

// Reasons of the Stalled condition. True: a refusal of the spec (any
// Degraded reason but ResolveFailed, which is retried), NodeFailed,
// RuntimeClassConflict, or NoNodes. False: RolledOut, or:
const (
	// ReasonReconciling: Stalled is False because the operator is
	// working towards the spec; the Reconciling condition says how.
	ReasonReconciling = "Reconciling"
)

// Reasons a node that matches the selector is skipped: it cannot run the
// shim, so it is neither installed nor counted in status.nodes
// (status.skippedNodes and status.skipped say how many and why).
const (
	// SkipNotLinux: the node is not Linux (its kubernetes.io/os label, or
	// else status.nodeInfo.operatingSystem).
	SkipNotLinux = "NotLinux"
	// SkipNotContainerd: the node's container runtime
	// (status.nodeInfo.containerRuntimeVersion) is not containerd. The
	// operator no longer gives it (SkipRuntimeNotSupported says the same
	// of any runtime); kept for the readers of older statuses.
	SkipNotContainerd = "NotContainerd"
	// SkipRuntimeNotSupported: the node's container runtime
	// (status.nodeInfo.containerRuntimeVersion) is not one of the Shim's
	// spec.containerRuntimes; the detail names it and says how to list it.
	SkipRuntimeNotSupported = "RuntimeNotSupported"
	// SkipNoArtifact: the Shim has no artifact for the node's platform
	// (only per-platform artifacts, none of them the node's).
	SkipNoArtifact = "NoArtifact"
	// SkipImmutableOS: the node runs an immutable OS
	// (status.nodeInfo.osImage: Talos, Bottlerocket) with no writable
	// /etc or /opt: no installer runs there. Such nodes get their
	// runtimes in the OS image (a Talos system extension, a Bottlerocket
	// variant, examples/image-builder).
	SkipImmutableOS = "ImmutableOS"
	// SkipReadOnlyHost: the node's installer found a directory it must
	// write on a read-only filesystem, or the bundle root mounted noexec
	// (the detail names it), and changed
	// nothing; the node is tried again with the next spec. Bake the
	// runtime into the node image, or point the installer at writable
	// directories (the operator's --bundle-root and --link-dir).
	SkipReadOnlyHost = "ReadOnlyHost"
	// SkipHandlerNotReported: the node's image has the shim
	// (spec.preinstalledOn, or fetchStrategy.type preinstalled) but its
	// kubelet does not report one of the Shim's handlers
	// (status.runtimeHandlers; containerd 2.0+ and kubelet 1.30+ report
	// them): it is labelled once it does.
	SkipHandlerNotReported = "HandlerNotReported"
)

// Container runtimes of spec.containerRuntimes.
const (
	RuntimeContainerd = "containerd"
	RuntimeCRIO       = "cri-o"
)

// ReservedHandler is containerd's own runtime handler, which no Shim can
// register or adopt.
const ReservedHandler = "runc"

// ReservedRuntimeTypes are the runtime types of containerd's own shims. A
// Shim may name one only to run its bundle's OCI runtime through
// containerd's shim (runtimeOptions.BinaryName, the NVIDIA and crun
// pattern) and without a runtimePath: the bundle then never provides, and
// shimkit never links, a binary containerd would start for every runc pod.
func ReservedRuntimeTypes() []string {
	return []string{"io.containerd.runc.v1", "io.containerd.runc.v2", "io.containerd.runhcs.v1"}
}

// IsReservedRuntimeType reports whether t is one of ReservedRuntimeTypes.
func IsReservedRuntimeType(t string) bool { return slices.Contains(ReservedRuntimeTypes(), t) }

// BinaryNameOption is the runtimeOptions key through which containerd's
// runc shim runs another OCI runtime.
const BinaryNameOption = "BinaryName"
