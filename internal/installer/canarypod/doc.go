// Package canarypod runs a node plan's canary as a Kubernetes Pod on the
// installer's own node, through the API server, so that kubelet runs it
// exactly as it runs a workload of the RuntimeClass (a sandbox kubelet did
// not create itself would be killed by kubelet's housekeeping).
//
// It guarantees:
//   - the pod is pinned to the node (spec.nodeName, no scheduling), uses
//     the plan's RuntimeClass, never restarts, tolerates every taint,
//     mounts no service account token and is bounded by the canary's
//     timeout (activeDeadlineSeconds as well as the caller's deadline);
//   - RunCanary returns nil only when the pod Succeeded; otherwise the
//     error wraps installer.ErrCanaryFailed and says why: first the
//     newest Warning event about the pod (the kubelet's
//     FailedCreatePodSandBox with the runtime's error, a
//     CreateContainerError, an image that cannot be pulled), then the
//     container's exit code, reason and message, the pod's reason, or what
//     it was waiting for when the time ran out;
//   - the pod is deleted afterwards, whatever happened.
//
// Runner implements installer.CanaryRunner; package installer does not
// import this one (nor client-go): image builders that embed the installer
// link no Kubernetes client.
package canarypod
