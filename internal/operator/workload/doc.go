// Package workload reads, for a rollout's health gate, the failures that
// a runtime caused to the workloads of some RuntimeClasses on some nodes:
// pods whose containers could not be created, run or started, and the
// kubelet's FailedCreatePodSandBox Events (judged by package health);
// and, for a removal, the pods of a Shim's RuntimeClasses that still run
// on each node (PodsOn).
//
// It guarantees that a cluster whose Shims have no gate caches no pod and
// no Event: AddToCache registers trimmed, indexed informers that start on
// the first Failures call, which waits at most SyncWait for them; and
// that a pod of another namespace than the operator's keeps only what the
// gate reads (TrimPod, TrimEvent). A failed read says what could not be
// listed and which RBAC it needs.
package workload
